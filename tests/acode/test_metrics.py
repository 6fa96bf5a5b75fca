"""/metrics: what the agents did, counted from committed audit events, for operators only."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.test import Client
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from acode.routing import websocket_urlpatterns
from sessions_app.models import JobStatus
from sessions_app.services.audit import audit_record
from tests.sessions_app.jobkit import run, scripted_model, session_in

pytestmark = pytest.mark.django_db

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
REMOTE = "203.0.113.9"


def scrape(client: Client, **extra: Any) -> Samples:
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    """How much the samples of ``name`` with (at least) these labels grew."""

    def total(samples: Samples) -> float:
        wanted = set(labels.items())
        return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)

    return total(after) - total(before)


@pytest.fixture
def committed(
    django_capture_on_commit_callbacks: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """Run the after-commit work of the block (where metrics are counted), as a real commit
    would; the job runs in-process here, so it is not also sent to a Celery queue."""
    monkeypatch.setattr("sessions_app.services.jobs._enqueue", lambda job, queue: None)

    @contextlib.contextmanager
    def block() -> Iterator[None]:
        with django_capture_on_commit_callbacks(execute=True):
            yield

    return block


def test_a_job_shows_in_the_metrics(
    client: Client, user: Any, tmp_path: Path, committed: Callable[[], Any]
) -> None:
    scripted_model(
        "coder",
        [
            {"tool_calls": [{"name": "create_file", "arguments": {"path": "a.txt", "content": "hi"}}]},
            {"tool_calls": [{"name": "delete_file", "arguments": {"path": "/etc/hostname"}}]},
            {"content": "done"},
        ],
    )  # fmt: skip
    before = scrape(client)
    with committed():
        session = session_in("coder", user, workspace=tmp_path)
        job = run(session, "make a file", user)
    after = scrape(client)
    assert job.status == JobStatus.SUCCEEDED

    def grew(name: str, **labels: str) -> float:
        return delta(before, after, name, **labels)

    coder = {"role": "coder"}
    assert grew("acode_role_transitions_total", from_role="planner", to_role="coder") == 1
    assert grew("acode_tool_calls_total", tool="create_file", outcome="ok", **coder) == 1
    assert grew("acode_tool_calls_total", tool="delete_file", outcome="denied", **coder) == 1
    assert grew("acode_tool_denials_total", tool="delete_file", code="ACODE-ROL-003", **coder) == 1
    assert grew("acode_tool_denials_total", tool="create_file", **coder) == 0
    assert grew("acode_jobs_total", status="queued", **coder) == 1
    assert grew("acode_jobs_total", status="succeeded", **coder) == 1
    model = {"model": "scripted-test", **coder}
    assert grew("acode_llm_request_seconds_count", **model) == 3  # two tool rounds, one answer
    assert grew("acode_llm_request_seconds_bucket", le="+Inf", **model) == 3
    assert grew("acode_llm_tokens_total", direction="in", **model) == job.tokens_in > 0
    assert grew("acode_llm_tokens_total", direction="out", **model) == job.tokens_out


def test_a_refused_transition_is_counted_by_code(
    client: Client, user: Any, committed: Callable[[], Any]
) -> None:
    from acode.errors import AcodeError
    from sessions_app.services.transitions import session_transition

    before = scrape(client)
    with committed():
        session = session_in("default", user)
        with pytest.raises(AcodeError) as refused:
            session_transition(session=session, to_role="coder", reason="skip the plan", actor="t")
    after = scrape(client)
    code = refused.value.code
    assert delta(before, after, "acode_transition_refusals_total", to_role="coder", code=code) == 1


def test_rolled_back_audit_events_are_not_counted(
    client: Client, committed: Callable[[], Any]
) -> None:
    def transition() -> None:
        audit_record(
            event_type="RoleTransition", actor="t", role="tester", target="explorer->tester",
            details={"from_role": "explorer", "to_role": "tester"},
        )  # fmt: skip

    labels = {"from_role": "explorer", "to_role": "tester"}
    before = scrape(client)
    with committed(), contextlib.suppress(RuntimeError), transaction.atomic():
        transition()
        raise RuntimeError("roll back")
    assert delta(before, scrape(client), "acode_role_transitions_total", **labels) == 0
    with committed():
        transition()
    assert delta(before, scrape(client), "acode_role_transitions_total", **labels) == 1


def test_anonymous_remote_clients_are_refused(client: Client) -> None:
    response = client.get("/metrics", REMOTE_ADDR=REMOTE)
    assert response.status_code == 403
    body = response.json()
    assert body["code"] == "ACODE-API-403"
    assert "ACODE_METRICS_ALLOWED_IPS" in body["message"]
    assert "acode_" not in response.content.decode()


def test_allowed_networks_token_and_staff_may_read(
    client: Client, admin_user: Any, user: Any, settings: Any
) -> None:
    settings.ACODE_METRICS_ALLOWED_IPS = ["10.1.0.0/16"]
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics").status_code == 403  # 127.0.0.1 is no longer listed

    settings.ACODE_METRICS_TOKEN = "s3cret-token"
    scrape(client, REMOTE_ADDR=REMOTE, HTTP_AUTHORIZATION="Bearer s3cret-token")
    wrong = client.get("/metrics", REMOTE_ADDR=REMOTE, HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.status_code == 403

    client.force_login(user)
    assert client.get("/metrics", REMOTE_ADDR=REMOTE).status_code == 403
    client.force_login(admin_user)
    scrape(client, REMOTE_ADDR=REMOTE)


# Consumers reach the database from other threads: this test commits for real, then flushes.
@pytest.mark.django_db(transaction=True)
def test_open_dashboard_websockets_are_a_gauge(user: Any, settings: Any) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    labels = {"consumer": "BoardConsumer"}

    def open_sockets() -> float:
        return REGISTRY.get_sample_value("acode_websocket_clients", labels) or 0.0

    def socket(who: Any) -> WebsocketCommunicator:
        comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/board/")
        comm.scope["user"] = who
        return comm

    async def body() -> None:
        start = open_sockets()
        refused = socket(AnonymousUser())
        assert (await refused.connect())[0] is False
        await refused.disconnect()
        assert open_sockets() == start
        comm = socket(user)
        assert (await comm.connect())[0] is True
        await comm.receive_from()  # the full board
        assert open_sockets() == start + 1
        await comm.disconnect()
        assert open_sockets() == start

    async_to_sync(body)()
