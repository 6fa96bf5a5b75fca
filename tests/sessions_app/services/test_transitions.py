"""The one transition decision: every rule it knows is enforced, whichever way a client asks."""

from __future__ import annotations

from typing import Any

import pytest

from acode.errors import AcodeError
from roles.models import Role, TransitionRule
from roles.registry import registry
from sessions_app.models import AgentSession, AuditEvent, AuditEventType
from sessions_app.services import transitions
from sessions_app.services.plans import plan_set
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition

pytestmark = pytest.mark.django_db


@pytest.fixture
def task_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new precondition, 'the session has a task', put on Default → Planner."""
    monkeypatch.setitem(
        transitions.PRECONDITIONS,
        "task_given",
        lambda session: "" if session.task.strip() else "the session has no task",
    )
    rule = TransitionRule.objects.get(from_role__slug="default", to_role__slug="planner")
    rule.precondition = "task_given"
    rule.save()
    registry.invalidate()


@pytest.mark.parametrize("expected_role", [None, "default"])
def test_a_precondition_added_to_the_decision_is_enforced(
    task_rule: None, user: Any, expected_role: str | None
) -> None:
    bare = session_create(owner=user, title="No task yet")
    with pytest.raises(AcodeError) as refused:
        session_transition(
            session=bare, to_role="planner", reason="plan", user=user, expected_role=expected_role
        )
    assert refused.value.code == "ACODE-ROL-002"
    assert refused.value.details["unmet"] == "the session has no task"
    bare.refresh_from_db()
    assert bare.current_role.slug == "default"
    denied = AuditEvent.objects.get(session=bare, event_type=AuditEventType.TRANSITION_DENIED)
    assert denied.result == "ACODE-ROL-002"

    tasked = session_create(owner=user, title="Has one", task="Add JWT authentication")
    result = session_transition(
        session=tasked, to_role="planner", reason="plan", user=user, expected_role=expected_role
    )
    assert result.changed and result.session.current_role_id == registry.get("planner").id


def test_an_unknown_precondition_is_never_met(user: Any) -> None:
    rule = TransitionRule.objects.get(from_role__slug="default", to_role__slug="planner")
    rule.precondition = "moon_is_full"
    rule.save()
    registry.invalidate()
    session = session_create(owner=user, title="Moon")
    with pytest.raises(AcodeError) as refused:
        session_transition(session=session, to_role="planner", reason="plan", user=user)
    assert "unknown" in refused.value.details["unmet"]


def test_coder_needs_a_plan_and_reviewer_needs_changes(user: Any) -> None:
    session = session_create(owner=user, title="Flow", task="t")
    session_transition(session=session, to_role="planner", reason="plan", user=user)
    with pytest.raises(AcodeError) as no_plan:
        session_transition(session=session, to_role="coder", reason="code", user=user)
    assert no_plan.value.details["failed_precondition"] == "plan_exists"
    plan_set(session=session, steps=["one step"], user=user)
    session_transition(session=session, to_role="coder", reason="code", user=user)
    with pytest.raises(AcodeError) as no_changes:
        session_transition(session=session, to_role="reviewer", reason="review", user=user)
    assert no_changes.value.details["failed_precondition"] == "changes_exist"
    assert "reviewer" not in no_changes.value.details["allowed_now"]


def test_a_stale_expected_role_changes_nothing(user: Any) -> None:
    session = session_create(owner=user, title="Stale")
    with pytest.raises(AcodeError) as stale:
        session_transition(
            session=session, to_role="planner", reason="x", user=user, expected_role="coder"
        )
    assert stale.value.code == "ACODE-ROL-006"
    assert AgentSession.objects.get(pk=session.pk).transition_count == 1


def test_the_role_in_force_is_a_no_op_that_writes_nothing(user: Any) -> None:
    session = session_create(owner=user, title="Same")
    before = AuditEvent.objects.count()
    result = session_transition(session=session, to_role="default", reason="again", user=user)
    assert not result.changed and result.transition is None
    assert AuditEvent.objects.count() == before


def test_a_transition_records_the_role_version_entered(user: Any) -> None:
    session = session_create(owner=user, title="Versioned")
    result = session_transition(session=session, to_role="planner", reason="plan", user=user)
    planner = Role.objects.get(slug="planner")
    assert result.transition is not None
    assert result.transition.role_version_id == registry.get("planner").version_id
    assert result.session.current_role_id == planner.id


def test_a_reason_of_invisible_characters_is_no_reason(user: Any) -> None:
    session = session_create(owner=user, title="Blank")
    with pytest.raises(AcodeError) as blank:
        session_transition(
            session=session, to_role="planner", reason="\u200b\ufeff \u200d", user=user
        )
    assert blank.value.code == "ACODE-ROL-007"
