"""Delegation's rules without a worker (issue 41): which roles a job may hand work to (the
policy diff), depth and fan-out limits, the budget carved out of the parent's, and
children stopped when their parent ends (tests/sessions_app/test_delegation_workers.py
runs it on real workers)."""

from __future__ import annotations

from typing import Any

import pytest

from acode.errors import AcodeError
from roles.models import Role
from roles.registry import registry
from roles.services import role_write
from sessions_app.models import Job, JobStatus
from sessions_app.services.delegation import delegation_start
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
