"""A blocked sub-agent climbs the chain, on real Celery workers with scripted models (issue
41): a helper two levels down asks a question; its parent (mid) is told through collect and
does not resolve it, so the block becomes mid's and goes up to the lead, which does not
resolve it either; at the top it is put to a person on the dashboard ("escalated from
helper via mid, lead"), whose answer reaches the lead's model, which re-delegates with it.
Each hop is audited with both roles and visible on the page and in the API."""

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

QUESTION = "Which port should the server listen on?"
CHAIN = "escalated from helper via mid, lead"


def _step(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def _roles(queue: str) -> None:
    asks = ["read_files", "ask_human"]
    role_write(data={"slug": "lead", "name": "Lead", "queue": queue, "max_llm_calls": 20,
                     "permissions": [*asks, "spawn"]}, create=True, actor="test")  # fmt: skip
    role_write(data={"slug": "mid", "name": "Mid", "parent": "lead", "queue": queue,
                     "permissions": [*asks, "spawn"]}, create=True, actor="test")  # fmt: skip
    role_write(data={"slug": "helper", "name": "Helper", "parent": "mid", "queue": queue,
                     "permissions": asks}, create=True, actor="test")  # fmt: skip


def _scripts() -> None:
    scripted_model("lead", [
        _step("delegate", {"role": "mid", "task": "Get the server started", "llm_calls": 8}),
        _step("collect", {"timeout_seconds": 90}),
        {"content": "mid could not get it started"},  # not resolved: it goes to a person
        _step("delegate", {"role": "helper", "task": "Start it on 8080", "llm_calls": 2}),
        _step("collect", {"timeout_seconds": 60}),
        {"content": "server started on 8080"},
    ])  # fmt: skip
    scripted_model("mid", [
        _step("delegate", {"role": "helper", "task": "Start the server", "llm_calls": 3}),
        _step("collect", {"timeout_seconds": 60}),
        {"content": "the helper is stuck"},  # not resolved: it climbs to the lead
    ])  # fmt: skip
    scripted_model("helper", [
        [_step("ask_human", {"question": QUESTION})],  # its first job asks
        [{"content": "started on 8080"}],  # the second, told the answer, does it
    ])  # fmt: skip


def _pending(session: AgentSession, timeout: float = 90) -> ToolConsent:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        consent = ToolConsent.objects.filter(session=session, status="pending").first()
        if consent is not None:
            return consent
        time.sleep(0.2)
    raise AssertionError("nothing was put to a person")


def test_a_blocked_sub_agent_climbs_to_its_parents_then_a_person_whose_answer_goes_down(
    user: Any, tmp_path: Path
) -> None:
    queue = f"test-{uuid.uuid4().hex[:8]}"
    _roles(queue)
    _scripts()
    (tmp_path / "ws").mkdir()
    session = session_in("default", user, workspace=tmp_path / "ws")
    AgentSession.objects.filter(pk=session.pk).update(current_role=Role.objects.get(slug="lead"))
    env = {"ACODE_SANDBOX": "off", "ACODE_CONSENT_POLL_SECONDS": "0.2"}
    worker = Worker(queue, tmp_path / "worker.log", env, concurrency=3)
    client = Client()
    client.force_login(user)
    try:
        lead = job_create(session=session, request="Start the server", user=user)
        consent = _pending(session)
        # Put to a person as the top job's (the lead's), with the chain it climbed.
        assert (consent.tool, consent.target, consent.rule, consent.role_slug) == (
            "ask_human", QUESTION, CHAIN, "lead"
        )  # fmt: skip
        page = client.get(f"/sessions/{session.pk}/").content.decode()
        assert CHAIN in page and QUESTION in page and ">Answer</button>" in page
        mid = Job.objects.get(parent=lead)
        # The hop is visible on the job tree: mid's card says what it passed up.
        assert f"blocked (question), escalated from helper via mid: {QUESTION}" in page
        listed = client.get(f"/api/sessions/{session.pk}/consents/").json()
        items = listed["results"] if isinstance(listed, dict) else listed
        assert [c["rule"] for c in items] == [CHAIN]
        client.post(f"/sessions/{session.pk}/consents/{consent.pk}/",
                    {"allow": "yes", "note": "Use port 8080"})  # fmt: skip
        lead = wait_for(lead, FINAL_JOB_STATUSES, 90)
    finally:
        worker.stop()
    log = (tmp_path / "worker.log").read_text()[-3000:]
    assert (lead.status, lead.result) == ("succeeded", "server started on 8080"), log
    first, retry = Job.objects.filter(role__slug="helper").order_by("created_at")
    assert first.parent_id == mid.pk and retry.parent_id == lead.pk
    assert first.result == f"Asked its parent agent: {QUESTION}"
    assert first.escalation["handled"] == "parent"
    assert Job.objects.get(pk=mid.pk).escalation == {
        "kind": "question", "from": "helper", "via": ["mid"], "reason": QUESTION,
        "handled": "person",
    }  # fmt: skip
    assert (retry.status, retry.result) == ("succeeded", "started on 8080")
    # The person's answer reached the lead's model, which went on with it.
    told = [
        m["content"]
        for e in lead.events.filter(kind=JobEventKind.LLM_REQUEST)
        for m in e.data["messages"]
        if m["role"] == "user"
    ]
    assert any(f"A person answered the block {CHAIN} (dev): Use port 8080" in t for t in told)
    # In the API: the job shows its parent and the block it passed up.
    data = client.get(f"/api/jobs/{mid.pk}/").json()
    assert data["parent"] == str(lead.pk) and data["escalation"]["via"] == ["mid"]
    # Each hop audited with both roles: helper -> mid, mid -> lead, lead -> a person.
    hops = AuditEvent.objects.filter(session=session, details__phase="escalated").order_by("id")
    assert [(h.role, h.details["child_role"], h.details["parent_role"]) for h in hops] == [
        ("mid", "helper", "mid"),
        ("lead", "mid", "lead"),
    ]
    asked = AuditEvent.objects.get(session=session, event_type="ToolConsent",
                                   details__phase="asked")  # fmt: skip
    assert (asked.role, asked.details["rule"], asked.details["to"]) == ("lead", CHAIN, "person")
    answered = AuditEvent.objects.get(session=session, event_type="ToolConsent",
                                      details__phase="answered")  # fmt: skip
    assert (answered.actor, answered.result) == ("dev", "allowed")
