"""A call a rule puts to a person, through a real Celery worker: the job waits, the call
and its rule are on the session page and in the API for the session's owner, and the job
goes on with the answer: allowed, it runs and is audited; refused, or unanswered in time,
the model is told so. Every step is audited."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from roles.registry import registry
from roles.services import role_write
from sessions_app.models import (
    FINAL_JOB_STATUSES,
    AgentSession,
    AuditEvent,
    JobEventKind,
    JobStatus,
    ToolConsent,
)
from sessions_app.services.jobs import job_create
from tests.sessions_app.jobkit import scripted_model, session_in
from tests.sessions_app.runkit import calls
from tests.sessions_app.test_tasks import Worker, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"), reason="needs a Redis broker (make test provides one)"
    ),
]

ECHO_ASKS = {"program": "echo", "args": "text", "outcome": "ask"}
TIMEOUT = 6


def _pending(session: AgentSession, timeout: float = 60) -> ToolConsent:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        consent = ToolConsent.objects.filter(session=session, status="pending").first()
        if consent is not None:
            return consent
        time.sleep(0.2)
    raise AssertionError("no call was put to a person")


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _consent_rows(session: AgentSession) -> list[tuple[str, str]]:
    rows = AuditEvent.objects.filter(session=session, event_type="ToolConsent").order_by("id")
    return [(r.details["phase"], r.result) for r in rows]


def test_a_call_put_to_a_person_runs_when_allowed_and_is_refused_otherwise(
    user: Any, django_user_model: Any, tmp_path: Path
) -> None:
    queue = f"test-{uuid.uuid4().hex[:8]}"
    rules = [ECHO_ASKS, *registry.get("tester").spec.command_patterns]
    role_write(data={"queue": queue, "command_patterns": rules}, create=False, slug="tester",
               actor="test")  # fmt: skip
    scripted_model("tester", calls(("execute_command", {"argv": ["echo", "consented"]})))
    env = {"ACODE_SANDBOX": "off", "ACODE_CONSENT_POLL_SECONDS": "0.2",
           "ACODE_CONSENT_TIMEOUT_SECONDS": str(TIMEOUT)}  # fmt: skip
    worker = Worker(queue, tmp_path / "worker.log", env)
    sessions = []
    for name in ("allowed", "denied", "unanswered"):
        (tmp_path / name).mkdir()
        sessions.append(session_in("tester", user, workspace=tmp_path / name, change=True))
    stranger = django_user_model.objects.create_user("stranger", password="pw-stranger-1")
    try:
        # Allowed: the page and the API show the call and its rule; the owner allows it.
        job = job_create(session=sessions[0], request="run echo", user=user)
        consent = _pending(sessions[0])
        listed = _api(user).get(f"/api/sessions/{sessions[0].pk}/consents/").json()
        assert [(c["id"], c["status"], c["rule"], c["target"]) for c in listed] == [
            (str(consent.pk), "pending", "command_rules[0]: echo", "echo consented")
        ]
        client = Client()
        client.force_login(user)
        page = client.get(f"/sessions/{sessions[0].pk}/").content.decode()
        assert "Allow this call" in page and "command_rules[0]: echo" in page
        url = f"/api/sessions/{sessions[0].pk}/consents/{consent.pk}/"
        assert _api(stranger).post(url, {"allow": True}, format="json").status_code == 404
        answered = _api(user).post(url, {"allow": True}, format="json")
        assert answered.status_code == 200 and answered.json()["status"] == "allowed"
        again = _api(user).post(url, {"allow": False}, format="json")
        assert again.status_code == 409 and again.json()["code"] == "ACODE-TOL-009"
        job = wait_for(job, FINAL_JOB_STATUSES, 60)

        # Refused by the owner, with a note the model reads.
        refused_job = job_create(session=sessions[1], request="run echo", user=user)
        refused = _pending(sessions[1])
        response = _api(user).post(
            f"/api/sessions/{sessions[1].pk}/consents/{refused.pk}/",
            {"allow": False, "note": "not on a Friday"}, format="json",
        )  # fmt: skip
        assert response.status_code == 200 and response.json()["status"] == "denied"
        refused_job = wait_for(refused_job, FINAL_JOB_STATUSES, 60)

        # Nobody answers: denied after the timeout.
        late_job = job_create(session=sessions[2], request="run echo", user=user)
        _pending(sessions[2])
        late_job = wait_for(late_job, FINAL_JOB_STATUSES, 60 + TIMEOUT)
    finally:
        worker.stop()
    log = (tmp_path / "worker.log").read_text()[-3000:]

    assert job.status == JobStatus.SUCCEEDED, (job.error_code, job.error_message, log)
    result = job.events.get(kind=JobEventKind.TOOL_RESULT)
    assert result.data["status"] == "ok" and "consented" in result.data["output"]
    assert _consent_rows(sessions[0]) == [("asked", "ACODE-TOL-006"), ("answered", "allowed")]
    ran = AuditEvent.objects.get(session=sessions[0], event_type="RoleAction")
    assert ran.details["consent"] == str(consent.pk) and ran.details["consented_by"] == "dev"
    asked = AuditEvent.objects.get(session=sessions[0], event_type="ToolConsent",
                                   details__phase="asked")  # fmt: skip
    assert asked.details["replay"]["arguments"] == {"argv": ["echo", "consented"]}

    assert refused_job.status == JobStatus.SUCCEEDED, (refused_job.error_message, log)
    denied = refused_job.events.get(kind=JobEventKind.TOOL_DENIED).data
    assert denied["code"] == "ACODE-TOL-007" and "not on a Friday" in denied["reason"]
    assert _consent_rows(sessions[1]) == [("asked", "ACODE-TOL-006"), ("answered", "denied")]
    assert not AuditEvent.objects.filter(session=sessions[1], event_type="RoleAction").exists()

    assert late_job.status == JobStatus.SUCCEEDED, (late_job.error_message, log)
    late = late_job.events.get(kind=JobEventKind.TOOL_DENIED).data
    assert late["code"] == "ACODE-TOL-008" and f"within {TIMEOUT} s" in late["reason"]
    assert _consent_rows(sessions[2]) == [
        ("asked", "ACODE-TOL-006"),
        ("timed_out", "ACODE-TOL-008"),
    ]
    assert ToolConsent.objects.get(session=sessions[2]).status == "timed_out"
