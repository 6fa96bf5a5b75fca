"""Delegation's rules without a worker (issue 41): which roles a job may hand work to (the
policy diff), depth and fan-out limits, the budget carved out of the parent's, and
children stopped when their parent ends (tests/sessions_app/test_delegation_workers.py
runs it on real workers)."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from acode.errors import AcodeError
from roles.models import Role
from roles.registry import registry
from roles.services import role_write
from sessions_app.models import AuditEvent, Job, JobStatus, ToolConsent
from sessions_app.services.consents import tool_consent_answer, tool_consent_ask
from sessions_app.services.delegation import (
    MAX_ESCALATION_HOPS,
    delegation_ask_parent,
    delegation_escalate,
    delegation_start,
    escalation_climbs,
)
from sessions_app.services.jobs import job_finish
from sessions_app.services.sessions import session_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def lead(user: Any) -> Job:
    role_write(data={"slug": "lead", "name": "Lead", "permissions": ["read_files", "spawn"],
                     "max_llm_calls": 10}, create=True, actor="test")  # fmt: skip
    session = session_create(owner=user, title="t", task="t")
    return Job.objects.create(session=session, role=Role.objects.get(slug="lead"), request="r",
                              created_by="dev", status="running")  # fmt: skip


def _start(parent: Job, role: str, calls: int | None = 2) -> Job:
    return delegation_start(parent=parent, role=role, task="look", llm_calls=calls)


def test_the_same_a_lower_or_a_no_wider_role_is_accepted_a_wider_one_refused(lead: Job) -> None:
    role_write(data={"slug": "below", "name": "Below", "parent": "lead",
                     "permissions": ["read_files"]}, create=True, actor="test")  # fmt: skip
    assert _start(lead, "lead").role.slug == "lead"
    assert _start(lead, "below").role.slug == "below"
    assert _start(lead, "explorer").role.slug == "explorer"  # unrelated, but reads only
    with pytest.raises(AcodeError) as info:
        _start(lead, "tester")
    assert info.value.code == "ACODE-JOB-010"
    assert "Role tester may do what lead may not" in info.value.message
    assert "execute_commands" in info.value.message


def test_budget_depth_and_fan_out(lead: Job) -> None:
    child = _start(lead, "lead", calls=4)
    lead.refresh_from_db()
    assert (child.limit_llm_calls, lead.limit_llm_calls) == (4, 6)
    assert child.parent_id == lead.pk
    assert _start(lead, "lead", calls=9).limit_llm_calls == 5  # all but one of the 6 left
    with pytest.raises(AcodeError) as info:
        _start(lead, "lead", calls=1)  # nothing left but the parent's own last call
    assert info.value.code == "ACODE-JOB-012"
    grandchild = _start(child, "lead", calls=1)
    with pytest.raises(AcodeError) as info:  # the lead's max_delegation_depth: 2 below it
        _start(grandchild, "lead", calls=1)
    assert info.value.code == "ACODE-JOB-011"


def test_fan_out_is_bounded_by_the_role(lead: Job) -> None:
    role_write(data={"max_sub_agents": 2}, create=False, slug="lead", actor="test")
    _start(lead, "lead", calls=1)
    _start(lead, "lead", calls=1)
    with pytest.raises(AcodeError) as info:
        _start(lead, "lead", calls=1)
    assert info.value.code == "ACODE-JOB-011" and "at most 2 sub-agents" in info.value.message
    # Raising it is a gain the policy diff reports; the role's content names it.
    assert registry.get("lead").spec.content()["max_sub_agents"] == 2


def test_children_stop_when_their_parent_ends(lead: Job) -> None:
    queued = _start(lead, "lead", calls=1)
    running = _start(lead, "lead", calls=1)
    Job.objects.filter(pk=running.pk).update(status=JobStatus.RUNNING)
    job_finish(lead, JobStatus.SUCCEEDED, result="done")
    queued.refresh_from_db()
    running.refresh_from_db()
    assert queued.status == JobStatus.CANCELLED
    assert running.cancel_requested and running.status == JobStatus.RUNNING  # at its next step


def _ended(job: Job, status: str, **fields: Any) -> Job:
    Job.objects.filter(pk=job.pk).update(status=status, finished_at=timezone.now(), **fields)
    job.refresh_from_db()
    return job


def test_a_blocked_child_climbs_to_its_parents_parent_unless_the_parent_retried(lead: Job) -> None:
    mid = _ended(_start(lead, "lead", calls=4), JobStatus.RUNNING)
    helper = _ended(_start(mid, "lead", calls=1), JobStatus.LIMIT_EXCEEDED,
                    error_code="ACODE-JOB-001", error_message="reached 1 LLM calls")  # fmt: skip
    assert delegation_escalate(mid) is None  # it has a parent: the block goes up, no person
    mid.refresh_from_db()
    helper.refresh_from_db()
    assert mid.escalation == {"kind": "failed", "from": "lead", "via": ["lead"],
                              "reason": "ACODE-JOB-001 reached 1 LLM calls"}  # fmt: skip
    assert helper.escalation["handled"] == "parent" and helper.collected
    hop = AuditEvent.objects.get(details__phase="escalated", details__child_job=str(helper.pk))
    assert (hop.role, hop.details["parent_job"]) == ("lead", str(mid.pk))
    # A parent that delegated again after the block ended resolved it: nothing climbs.
    other = _ended(_start(lead, "lead", calls=1), JobStatus.FAILED, error_message="stuck")
    _start(lead, "lead", calls=1)
    assert delegation_escalate(lead) is None  # and mid has not ended: nothing to pass on
    other.refresh_from_db()
    assert "handled" not in other.escalation


def test_the_top_job_puts_a_block_to_a_person_whose_remembered_answer_is_reused(
    lead: Job, user: Any, settings: Any
) -> None:
    child = _ended(_start(lead, "lead", calls=1), JobStatus.SUCCEEDED)
    delegation_ask_parent(job=child, question="Which port?")
    settings.ACODE_CONSENT_TIMEOUT_SECONDS = 0  # nobody answers in a unit test
    told = delegation_escalate(lead)
    assert told is not None and "Nobody allowed this call" in told.text
    consent = ToolConsent.objects.get(job=lead)
    assert (consent.tool, consent.target, consent.rule, consent.role_slug, consent.status) == (
        "ask_human", "Which port?", "escalated from lead via lead", "lead", "timed_out"
    )  # fmt: skip
    # A person answers the same block once (as on the dashboard); the next time it is reused.
    asked = tool_consent_ask(session=lead.session, job=None, role="lead", tool="ask_human",
                             target="Which port?", rule=consent.rule, reason="", arguments={},
                             asked_audit_id=None, timeout_seconds=60)  # fmt: skip
    tool_consent_answer(consent_id=asked.pk, session=lead.session, user=user, allow=True,
                        note="8080")  # fmt: skip
    again = _ended(_start(lead, "lead", calls=1), JobStatus.SUCCEEDED)
    delegation_ask_parent(job=again, question="Which port?")
    told = delegation_escalate(lead)
    assert told is not None and told.text.endswith("(dev): answered before by dev: 8080")


def test_the_depth_guard_sends_a_block_to_a_person_instead_of_climbing(lead: Job) -> None:
    child = _start(lead, "lead", calls=1)
    block = {"kind": "failed", "from": "lead", "via": ["lead"], "reason": "x"}
    assert escalation_climbs(child, block)
    assert not escalation_climbs(lead, block)  # the top: a person
    too_far = {**block, "via": ["lead"] * MAX_ESCALATION_HOPS}
    assert not escalation_climbs(child, too_far)
    Job.objects.filter(pk=lead.pk).update(parent=child)  # a loop in the chain
    child.refresh_from_db()
    assert not escalation_climbs(child, block)
