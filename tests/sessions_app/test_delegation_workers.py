"""Delegation on real Celery workers with scripted models (issue 41): a lead that may only
read delegates two sub-tasks to a narrower role; they run at the same time, each on its
role's queue with a budget carved out of the lead's, and report back through collect;
delegating to a wider role (the Coder) is refused with the policy diff's reason. Every
delegation is audited with both roles."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from roles.models import Role
from roles.services import role_write
from sessions_app.models import FINAL_JOB_STATUSES, AgentSession, AuditEvent, Job, JobEventKind
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


def _step(tool: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments}], **extra}


def _lead_session(user: Any, workspace: Path, queue: str) -> AgentSession:
    """A session whose role is ``lead``: reads and delegates, nothing else."""
    role_write(data={"slug": "lead", "name": "Lead", "permissions": ["read_files", "spawn"],
                     "queue": f"{queue}-lead", "max_llm_calls": 12}, create=True, actor="test")  # fmt: skip
    role_write(data={"slug": "summariser", "name": "Summariser", "parent": "lead",
                     "permissions": ["read_files"], "queue": f"{queue}-sub"},
               create=True, actor="test")  # fmt: skip
    session = session_in("default", user, workspace=workspace)
    AgentSession.objects.filter(pk=session.pk).update(  # set up: no rule leads into "lead"
        current_role=Role.objects.get(slug="lead")
    )
    session.refresh_from_db()
    return session


def test_a_lead_delegates_two_sub_tasks_that_run_at_once_and_report_back(
    user: Any, tmp_path: Path
) -> None:
    queue = f"test-{uuid.uuid4().hex[:8]}"
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("alpha\n")
    (tmp_path / "ws" / "b.txt").write_text("beta\n")
    session = _lead_session(user, tmp_path / "ws", queue)
    scripted_model("lead", [
        _step("delegate", {"role": "summariser", "task": "Summarise a.txt", "llm_calls": 3}),
        _step("delegate", {"role": "summariser", "task": "Summarise b.txt", "llm_calls": 3}),
        _step("delegate", {"role": "coder", "task": "Rewrite a.txt"}),
        _step("collect", {"timeout_seconds": 60}),
        {"content": "both summarised"},
    ])  # fmt: skip
    scripted_model("summariser", [
        _step("list_directory", {}, delay=2),  # long enough for the two to overlap
        {"content": "a summary"},
    ])  # fmt: skip
    worker = Worker(f"{queue}-lead,{queue}-sub", tmp_path / "worker.log",
                    {"ACODE_SANDBOX": "off"}, concurrency=3)  # fmt: skip
    try:
        lead = job_create(session=session, request="Summarise the files", user=user)
        lead = wait_for(lead, FINAL_JOB_STATUSES, 90)
    finally:
        worker.stop()
    log = (tmp_path / "worker.log").read_text()[-3000:]
    assert lead.status == "succeeded", (lead.error_code, lead.error_message, log)
    children = list(Job.objects.filter(parent=lead).order_by("created_at"))
    events = [(e.kind, str(e.data)[:300]) for e in lead.events.order_by("seq")]
    assert [(c.role.slug, c.status, c.result) for c in children] == [
        ("summariser", "succeeded", "a summary"),
        ("summariser", "succeeded", "a summary"),
    ], events
    first, second = children
    assert first.started_at and second.started_at and first.finished_at and second.finished_at
    assert first.started_at < second.finished_at and second.started_at < first.finished_at
    assert all(c.limit_llm_calls == 3 and c.collected for c in children)
    lead.refresh_from_db()
    assert lead.limit_llm_calls == 12 - 3 - 3  # what it gave away, it no longer has
    queued = [c.events.get(kind=JobEventKind.STATUS, data__status="queued").data for c in children]
    assert {q["queue"] for q in queued} == {f"{queue}-sub"}
    # Wider: refused with what the diff found the Coder may do that the lead may not.
    denied = lead.events.get(kind=JobEventKind.TOOL_DENIED).data
    assert denied["code"] == "ACODE-JOB-010", denied
    assert "Role coder may do what lead may not" in denied["reason"]
    assert "write_files" in denied["reason"] or "create_files" in denied["reason"]
    collected = lead.events.filter(kind=JobEventKind.TOOL_RESULT).last()
    assert collected is not None and collected.data["output"].count("a summary") == 2
    client = Client()
    client.force_login(user)  # the session page shows the tree: each sub-agent under its lead
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert page.count(f"sub-agent of #{str(lead.pk)[:8]}") == 2
    rows = AuditEvent.objects.filter(session=session, event_type="JobEvent", result="delegated")
    assert [(r.role, r.details["parent_role"], r.details["child_role"]) for r in rows] == [
        ("lead", "lead", "summariser"),
        ("lead", "lead", "summariser"),
    ]
