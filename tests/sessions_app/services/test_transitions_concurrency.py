"""Many clients changing one session's role at once, over real HTTP.

Acceptance: 20 concurrent clients each making 50 alternating valid transitions on one
session get only 200s or clean 409s, and the history, the session row and the audit
chain agree with each other afterwards. Runs against whatever DATABASE_URL names, so CI
covers both PostgreSQL (row locks) and SQLite (one writer at a time, busy timeout).
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import httpx
import pytest
from rest_framework.authtoken.models import Token

from sessions_app.models import AgentSession, AuditEvent, AuditEventType, RoleTransition
from sessions_app.services.audit_verify import audit_verify

CLIENTS = 20
REQUESTS_PER_CLIENT = 50
CLEAN_CONFLICTS = {"ACODE-ROL-002", "ACODE-ROL-006"}
OTHER_ROLE = {"default": "planner", "planner": "default"}


@dataclass
class ClientLog:
    """What one client saw: status counts and anything that was not a 200 or clean 409."""

    statuses: Counter[int] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)


def _run_client(
    number: int, base_url: str, token: str, sid: str, start: threading.Barrier, log: ClientLog
) -> None:
    # Every client starts believing the session is in Default and toggles from there;
    # a 409 ROL-006 means another client moved the role, so it adopts the role the
    # server reports and keeps going, as a well-behaved client would.
    believed = "default"
    # A long timeout: on SQLite writers queue behind one lock (busy timeout 20 s), and a
    # slow answer is fine here, only a wrong or missing one is not.
    with httpx.Client(
        base_url=base_url, headers={"Authorization": f"Token {token}"}, timeout=60.0
    ) as client:
        start.wait()
        for i in range(REQUESTS_PER_CLIENT):
            target = OTHER_ROLE[believed]
            try:
                response = client.post(
                    f"/api/sessions/{sid}/transition/",
                    json={
                        "to_role": target,
                        "reason": f"client {number} request {i}",
                        "expected_role": believed,
                    },
                )
            except httpx.HTTPError as exc:
                log.problems.append(f"client {number} request {i}: {type(exc).__name__}: {exc}")
                continue
            log.statuses[response.status_code] += 1
            try:
                body: Any = response.json()
            except ValueError:
                log.problems.append(
                    f"client {number} request {i}: HTTP {response.status_code}, not JSON"
                )
                continue
            if response.status_code == 200:
                if not body.get("changed") or body["session"]["current_role"]["slug"] != target:
                    log.problems.append(f"client {number} request {i}: 200 without change {body}")
                believed = target
            elif response.status_code == 409 and body.get("code") in CLEAN_CONFLICTS:
                log.codes[body["code"]] += 1
                current = body.get("details", {}).get("current_role")
                if body["code"] == "ACODE-ROL-006" and current in OTHER_ROLE:
                    believed = current
                else:
                    log.problems.append(f"client {number} request {i}: unexpected 409 {body}")
            else:
                log.problems.append(
                    f"client {number} request {i}: {response.status_code} {str(body)[:300]}"
                )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_concurrent_alternating_transitions_keep_history_and_audit_consistent(
    live_server: Any, user: Any, caplog: pytest.LogCaptureFixture
) -> None:
    token = Token.objects.create(user=user).key
    created = httpx.post(
        f"{live_server.url}/api/sessions/",
        json={"title": "Concurrency", "task": "Many clients, one session"},
        headers={"Authorization": f"Token {token}"},
        timeout=30.0,
    )
    assert created.status_code == 201, created.text
    sid = created.json()["id"]

    start = threading.Barrier(CLIENTS)
    logs = [ClientLog() for _ in range(CLIENTS)]
    threads = [
        threading.Thread(
            target=_run_client,
            args=(n, live_server.url, token, sid, start, logs[n]),
            name=f"transition-client-{n}",
        )
        for n in range(CLIENTS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    assert not any(t.is_alive() for t in threads), "a client never finished"

    problems = [p for log in logs for p in log.problems]
    # The live server runs in this process, so its logged exceptions say why, in one line
    # per kind, instead of a 500 page per request.
    server_errors = Counter(
        f"{type(r.exc_info[1]).__name__}: {str(r.exc_info[1]).splitlines()[0][:200]}"
        for r in caplog.records
        if r.name == "django.request" and r.exc_info and r.exc_info[1] is not None
    )
    assert not problems, (
        f"{len(problems)} of {CLIENTS * REQUESTS_PER_CLIENT} requests went wrong; "
        f"server exceptions: {dict(server_errors)}; first requests:\n" + "\n".join(problems[:5])
    )
    statuses = sum((log.statuses for log in logs), Counter[int]())
    assert set(statuses) <= {200, 409}, statuses
    assert statuses.total() == CLIENTS * REQUESTS_PER_CLIENT
    ok = statuses[200]
    assert ok > 0

    history = list(
        RoleTransition.objects.filter(session_id=sid).select_related("to_role").order_by("seq")
    )
    assert len(history) == ok + 1
    assert [t.seq for t in history] == list(range(1, len(history) + 1))
    assert history[0].from_role_id is None
    for before, entry in pairwise(history):
        # A lost update would show as two entries leaving the same role.
        assert entry.from_role_id == before.to_role_id, (before.seq, entry.seq)
        assert entry.from_role_id != entry.to_role_id, entry.seq
    session = AgentSession.objects.select_related("current_role").get(pk=sid)
    assert session.current_role_id == history[-1].to_role_id
    assert history[-1].to_role.slug in OTHER_ROLE

    report = audit_verify()
    assert report.ok, report.as_dict()
    audited = Counter(
        AuditEvent.objects.filter(session_id=sid).values_list("event_type", flat=True)
    )
    assert audited[AuditEventType.ROLE_TRANSITION] == ok
    assert audited[AuditEventType.TRANSITION_DENIED] == statuses[409]
