"""Escalation on real Celery workers with scripted models (issue 41): a sub-agent denied a
command goes to its parent agent first; the parent's own rule puts it to a person, who
allows it on the dashboard; the call runs as the parent's role, never the sub-agent's; the
answer is remembered and the next time the same call is allowed without asking anyone."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from roles.models import Role
from roles.services import role_write
from sessions_app.models import (
    FINAL_JOB_STATUSES,
    AgentSession,
    AuditEvent,
    Job,
    JobEventKind,
    ToolConsent,
)
from sessions_app.services.jobs import job_create
from tests.sessions_app.jobkit import scripted_model, session_in
from tests.sessions_app.test_tasks import Worker, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"), reason="needs a Redis broker (make test provides one)"
    ),
]

ECHO_ASKS = {"program": "echo", "args": "text", "outcome": "ask"}


def _step(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def _pending(session: AgentSession, timeout: float = 60) -> ToolConsent:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        consent = ToolConsent.objects.filter(session=session, status="pending").first()
        if consent is not None:
            return consent
        time.sleep(0.2)
    raise AssertionError("no call was put to a person")


def test_a_denied_sub_agent_escalates_to_its_parent_then_a_person_whose_answer_is_reused(
    user: Any, tmp_path: Path
) -> None:
    queue = f"test-{uuid.uuid4().hex[:8]}"
    role_write(data={"slug": "lead", "name": "Lead", "queue": queue,
                     "permissions": ["read_files", "spawn", "execute_commands"],
                     "command_patterns": [ECHO_ASKS]}, create=True, actor="test")  # fmt: skip
    role_write(data={"slug": "helper", "name": "Helper", "parent": "lead", "queue": queue,
                     "permissions": ["read_files"]}, create=True, actor="test")  # fmt: skip
    (tmp_path / "ws").mkdir()
    session = session_in("default", user, workspace=tmp_path / "ws")
    AgentSession.objects.filter(pk=session.pk).update(current_role=Role.objects.get(slug="lead"))
    scripted_model("lead", [
        _step("delegate", {"role": "helper", "task": "Say hello", "llm_calls": 3}),
        _step("collect", {"timeout_seconds": 60}),
        {"content": "helper done"},
    ])  # fmt: skip
    scripted_model("helper", [_step("execute_command", {"argv": ["echo", "hello"]}),
                              {"content": "said hello"}])  # fmt: skip
    env = {"ACODE_SANDBOX": "off", "ACODE_CONSENT_POLL_SECONDS": "0.2"}
    worker = Worker(queue, tmp_path / "worker.log", env, concurrency=2)
    try:
        first = job_create(session=session, request="Have hello said", user=user)
        consent = _pending(session)
        assert consent.role_slug == "lead"  # put to a person as the parent's call
        client = Client()
        client.force_login(user)
        page = client.get(f"/sessions/{session.pk}/").content.decode()
        assert "Allow this call" in page and "echo hello" in page
        client.post(f"/sessions/{session.pk}/consents/{consent.pk}/", {"allow": "yes"})
        first = wait_for(first, FINAL_JOB_STATUSES, 60)
        second = job_create(session=session, request="Have hello said again", user=user)
        second = wait_for(second, FINAL_JOB_STATUSES, 60)
    finally:
        worker.stop()
    log = (tmp_path / "worker.log").read_text()[-3000:]
    assert (first.status, second.status) == ("succeeded", "succeeded"), log
    helpers = list(Job.objects.filter(parent__in=[first, second]).order_by("created_at"))
    for helper in helpers:
        result = helper.events.get(kind=JobEventKind.TOOL_RESULT)
        assert result.data["status"] == "ok" and "hello" in result.data["output"]
        notes = [e.data["message"] for e in helper.events.filter(kind=JobEventKind.NOTE)]
        assert "escalated execute_command to lead: ask" in notes
    consents = list(ToolConsent.objects.filter(session=session).order_by("created_at"))
    assert [(c.status, c.answered_by_name) for c in consents] == [
        ("allowed", "dev"),
        ("allowed", "dev"),
    ]
    assert consents[1].remembered is not None and consents[1].note == "answered before by dev"
    # Each hop is audited: the helper's refusal, then the lead's decision of the same call;
    # the call ran as the lead (its role's rule asked), never as the helper.
    hops = AuditEvent.objects.filter(
        session=session, details__phase__in=["escalating", "escalated"]
    )
    assert [(h.role, h.details["phase"]) for h in hops.order_by("id")][:2] == [
        ("helper", "escalating"),
        ("lead", "escalated"),
    ]
    ran = AuditEvent.objects.filter(session=session, event_type="RoleAction")
    assert {r.role for r in ran if r.details.get("tool") == "execute_command"} == {"lead"}
