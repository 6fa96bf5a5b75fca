"""A call a person allowed is decided again before it runs: the role may have changed
while it waited (in-process: the executor waits in a thread, a person answers here)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from roles.models import Role
from roles.registry import registry
from roles.services import role_write
from sessions_app.agent.executor import ToolOutcome, tool_execute
from sessions_app.agent.tool_context import tool_context
from sessions_app.models import AuditEvent, Job, ToolConsent
from sessions_app.services.consents import tool_consent_answer
from tests.sessions_app.jobkit import session_in

pytestmark = pytest.mark.django_db(transaction=True)

ECHO_ASKS = {"program": "echo", "args": "text", "outcome": "ask"}


def _waiting_call(user: Any, workspace: Path) -> tuple[Any, Job, threading.Thread, list[Any]]:
    """A tester job's ``echo hi`` waiting for a person, in a thread; (session, job, the
    thread, where its outcome lands)."""
    registry.sync()
    rules = list(registry.get("tester").spec.command_patterns)
    role_write(data={"command_patterns": [ECHO_ASKS, *rules]}, create=False, slug="tester",
               actor="test")  # fmt: skip
    session = session_in("tester", user, workspace=workspace, change=True)
    job = Job.objects.create(session=session, role=Role.objects.get(slug="tester"), request="t",
                             created_by="dev", status="running")  # fmt: skip
    context = tool_context(job, session, [])
    registry.sync()
    outcome: list[ToolOutcome] = []

    def call() -> None:
        try:
            outcome.append(tool_execute(session=session, role=registry.get("tester"),
                                        tool="execute_command", arguments={"argv": ["echo", "hi"]},
                                        actor="job:test", context=context, job=job))  # fmt: skip
        finally:
            connection.close()

    waiting = threading.Thread(target=call)
    waiting.start()
    deadline = time.monotonic() + 30
    while not ToolConsent.objects.filter(session=session).exists():
        assert time.monotonic() < deadline, "the call was not put to a person"
        time.sleep(0.05)
    return session, job, waiting, outcome


def test_a_call_allowed_after_its_rule_was_removed_is_refused(
    user: Any, tmp_path: Path, settings: Any
) -> None:
    settings.ACODE_CONSENT_POLL_SECONDS = 0.05
    session, _, waiting, outcome = _waiting_call(user, tmp_path)
    rules = [r for r in registry.get("tester").spec.command_patterns if r != ECHO_ASKS]
    role_write(data={"command_patterns": rules}, create=False, slug="tester", actor="test")
    consent = ToolConsent.objects.get(session=session)
    tool_consent_answer(consent_id=consent.pk, session=session, user=user, allow=True)
    waiting.join(timeout=30)
    assert outcome and outcome[0].status == "denied", outcome
    assert outcome[0].code == "ACODE-ROL-003" and "echo" in outcome[0].reason
    refused = AuditEvent.objects.get(session=session, event_type="ToolDenied")
    assert refused.details["phase"] == "outcome" and refused.details["consent"] == str(consent.pk)
    assert not AuditEvent.objects.filter(session=session, event_type="RoleAction").exists()


def test_a_job_cancelled_while_its_call_waits_takes_the_question_with_it(
    user: Any, tmp_path: Path, settings: Any
) -> None:
    settings.ACODE_CONSENT_POLL_SECONDS = 0.05
    session, job, waiting, outcome = _waiting_call(user, tmp_path)
    Job.objects.filter(pk=job.pk).update(cancel_requested=True)
    waiting.join(timeout=30)
    assert outcome and (outcome[0].status, outcome[0].code) == ("denied", "ACODE-TOL-008")
    assert "cancelled" in outcome[0].reason
    assert ToolConsent.objects.get(session=session).status == "cancelled"
    row = AuditEvent.objects.get(
        session=session, event_type="ToolConsent", details__phase="cancelled"
    )
    assert row.result == "cancelled"
