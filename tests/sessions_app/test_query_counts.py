"""The pages and APIs that list sessions and audit rows make a fixed number of queries:
the same with 5 sessions and 40 audit rows as with 30 sessions and 200 (no N+1), and no
more than the numbers below. The data comes from ``acode_generate_data``."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from sessions_app.models import AgentSession

pytestmark = pytest.mark.django_db

# A path for the smaller or the larger volume ("small", "large"). Every request also reads
# the registry stamp, the login session and the user (3 queries).
Path = Callable[[str], str]


def generate(*, sessions: int, audit_events: int, seed: int) -> None:
    call_command(
        "acode_generate_data",
        sessions=sessions,
        transitions=sessions * 4,
        audit_events=audit_events,
        job_events=sessions * 8,
        owners=2,
        seed=seed,
        stdout=io.StringIO(),
    )


class SessionPages:
    """The session page of the session with the least history, then of the one with the
    most in the same role (which transitions a page offers depends on the role)."""

    role_id = 0

    def __call__(self, which: str) -> str:
        sessions = AgentSession.objects.order_by("transition_count", "pk")
        if which == "small":
            session = sessions.first()
            assert session is not None
            self.role_id = session.current_role_id
        else:
            session = sessions.filter(current_role_id=self.role_id).last()
            assert session is not None
        return f"/sessions/{session.pk}/"


def busiest_chain_session() -> str:
    return str(AgentSession.objects.order_by("-audit_seq", "pk").values_list("pk", flat=True)[0])


def read(client: Client, path: str) -> int:
    """GET the path and read the whole body (an export queries while it streams)."""
    response = client.get(path)
    assert response.status_code == 200, response.content[:300] if not response.streaming else ""
    if response.streaming:
        b"".join(response.streaming_content)
    return int(response.status_code)


def queries(client: Client, path: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        read(client, path)
    return len(captured)


ENDPOINTS: list[tuple[str, str, Path, int]] = [
    # (name, who, path, most queries)
    ("board", "lead", lambda _: "/", 8),
    ("board, owner", "owner", lambda _: "/", 10),
    ("board, search", "lead", lambda _: "/?q=e&status=active", 8),
    ("session list API", "lead", lambda _: "/api/sessions/", 5),
    ("session list API, owner", "owner", lambda _: "/api/sessions/", 7),
    # 12: with the delivered commits and the waits for a person (one query each).
    ("session page", "lead", SessionPages(), 12),
    ("audit API", "lead", lambda _: "/api/audit/", 4),
    ("audit API, owner", "owner", lambda _: "/api/audit/", 6),
    ("audit API, filtered", "lead", lambda _: f"/api/audit/?session={busiest_chain_session()}", 4),
    ("audit API, newest", "lead", lambda _: "/api/audit/?last=50&event_type=RoleAction", 5),
    ("audit API, time window", "lead", lambda _: "/api/audit/?since=2000-01-01T00:00:00Z", 4),
    ("audit page", "lead", lambda _: "/audit/", 6),
    ("audit page, owner", "owner", lambda _: "/audit/", 8),
    ("audit page, filtered", "lead", lambda _: "/audit/?event_type=ToolDecision&page=2", 6),
    ("audit export jsonl", "lead", lambda _: "/api/audit/export/?format=jsonl", 6),
    ("audit export csv, owner", "owner", lambda _: "/api/audit/export/?format=csv", 8),
]


@pytest.fixture
def clients(django_user_model: Any) -> dict[str, Client]:
    lead = django_user_model.objects.create_superuser("lead", "lead@example.com", "pw-lead-123")
    generate(sessions=5, audit_events=40, seed=1)  # also creates the owners
    out = {}
    for who, user in (("lead", lead), ("owner", User.objects.get(username="scale-owner-1"))):
        client = Client()
        client.force_login(user)
        out[who] = client
    return out


@pytest.mark.parametrize(("name", "who", "path", "most"), ENDPOINTS, ids=[e[0] for e in ENDPOINTS])
def test_queries_stay_the_same_as_rows_grow(
    clients: dict[str, Client],
    django_assert_max_num_queries: Any,
    name: str,
    who: str,
    path: Path,
    most: int,
) -> None:
    client = clients[who]
    small_path = path("small")
    read(client, small_path)  # the first request loads the role registry
    small = queries(client, small_path)
    generate(sessions=25, audit_events=160, seed=2)
    assert AgentSession.objects.count() == 30
    large_path = path("large")
    with django_assert_max_num_queries(most):
        read(client, large_path)
    assert queries(client, large_path) == small
