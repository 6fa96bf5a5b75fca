"""The one-statement transition (PostgreSQL) writes what the general path writes.

An owner's transition that states ``expected_role`` is one SQL statement on PostgreSQL;
everything else, and anything that statement does not write, goes the general way. These
tests hold both to the same rows, the same audit chain and the same refusals.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext

from acode.errors import AcodeError
from sessions_app import services
from sessions_app.audit import _canonical, audit_verify, canonical_parts
from sessions_app.models import AgentSession, AuditEvent, AuditEventType, RoleTransition

pytestmark = pytest.mark.django_db
postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the one-statement path is PostgreSQL's"
)

TRICKY = [
    "plain",
    'quotes " and \\ backslashes',
    "unicode: naïve 日本語 🚀",
    "control \x01 and \u2028 separators\n\t",
    "",
]


@pytest.mark.parametrize("text", TRICKY)
@pytest.mark.parametrize("session_id", [None, "7d7f2f55-7c39-4f4e-9f51-1f6a7d0b8c11"])
def test_canonical_parts_rebuild_the_canonical_text(text: str, session_id: str | None) -> None:
    fields: dict[str, Any] = {
        "event_type": "RoleTransition",
        "session_id": session_id,
        "role": text,
        "actor": text,
        "target": text,
        "result": text,
        "details": {"z": [text, 1, None, {"b": 2, "a": text}], "a": True, text: 1.5},
        "created_at": datetime(2026, 11, 22, 3, 4, 5, 678901, tzinfo=UTC),
    }
    prev_hash, seq = "ab" * 32, 12345678901
    before, between, after = canonical_parts(**fields)
    assert before + prev_hash + between + str(seq) + after == _canonical(
        **fields, seq=seq, prev_hash=prev_hash
    )


def _session(owner: Any, title: str = "one statement") -> AgentSession:
    return services.session_create(owner=owner, title=title, task="t")


def _move(session: AgentSession, to: str, owner: Any, **extra: Any) -> services.TransitionResult:
    return services.session_transition(
        session=session.pk, to_role=to, reason=f"  to {to}  ", user=owner, **extra
    )


@postgresql_only
def test_owner_stating_the_expected_role_takes_one_statement(user: Any) -> None:
    session = _session(user)
    with CaptureQueriesContext(connection) as queries:
        result = _move(session, "planner", user, expected_role="default", request_id="req-1")
    assert len(queries) == 1, [q["sql"][:80] for q in queries.captured_queries]
    assert result.changed and result.transition is not None
    assert result.session.current_role.slug == "planner"
    assert result.session.owner == user
    assert result.message == "Role transition: Default → Planner"


def _written(session: AgentSession) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The newest transition, audit event and session row, minus what differs by design."""
    transition = RoleTransition.objects.filter(session=session).order_by("-seq").first()
    event = AuditEvent.objects.filter(session=session).order_by("-seq").first()
    row = AgentSession.objects.get(pk=session.pk)
    assert transition is not None and event is not None
    skip = {"_state", "id", "created_at", "seq", "hash", "prev_hash", "role_since", "updated_at"}
    return (
        {k: v for k, v in vars(transition).items() if k not in skip},
        {k: v for k, v in vars(event).items() if k not in skip},
        {k: v for k, v in vars(row).items() if k not in skip | {"title", "workspace"}},
    )


def test_an_id_spelled_in_capitals_is_hashed_as_stored(user: Any) -> None:
    session = _session(user)
    result = services.session_transition(
        session=str(session.pk).upper(),
        to_role="planner",
        reason="shouting",
        user=user,
        expected_role="default",
    )
    assert result.changed
    assert audit_verify().ok


def test_both_paths_write_the_same_rows(user: Any) -> None:
    general, single = _session(user, "general"), _session(user, "single")
    for to, expected in (("planner", "default"), ("default", "planner")):
        # No expected role: the general path. With it: one statement on PostgreSQL.
        a = _move(general, to, user, request_id="r")
        b = _move(single, to, user, expected_role=expected, request_id="r")
        a_rows, b_rows = _written(general), _written(single)
        assert {**a_rows[0], "session_id": None} == {**b_rows[0], "session_id": None}
        assert {**a_rows[1], "session_id": None} == {**b_rows[1], "session_id": None}
        assert {**a_rows[2], "id": None} == {**b_rows[2], "id": None}
        assert a.session.transition_count == b.session.transition_count
        assert a.transition is not None and b.transition is not None
        assert (a.transition.seq, a.transition.reason) == (b.transition.seq, b.transition.reason)
    row = AgentSession.objects.get(pk=single.pk)
    assert row.transition_count == 3 and row.last_reason == "to default"
    assert RoleTransition.objects.filter(session=single).count() == 3
    assert audit_verify().ok


@postgresql_only
def test_plan_precondition_is_checked_in_the_statement(user: Any) -> None:
    session = _session(user)
    _move(session, "planner", user, expected_role="default")
    with pytest.raises(AcodeError) as refused:
        _move(session, "coder", user, expected_role="planner")
    assert refused.value.code == "ACODE-ROL-002"
    assert refused.value.details["unmet"] == "the session has no plan yet"
    assert AuditEvent.objects.filter(
        session=session, event_type=AuditEventType.TRANSITION_DENIED
    ).exists()
    services.plan_set(session=session, steps=["step one"], user=user)
    with CaptureQueriesContext(connection) as queries:
        moved = _move(session, "coder", user, expected_role="planner")
    assert len(queries) == 1 and moved.session.current_role.slug == "coder"
    assert audit_verify().ok


@postgresql_only
@pytest.mark.parametrize("plan", [{"steps": 1}, "a plan", 0, ""])
def test_a_plan_that_is_not_a_list_does_not_break_the_statement(user: Any, plan: Any) -> None:
    session = _session(user)
    _move(session, "planner", user, expected_role="default")
    AgentSession.objects.filter(pk=session.pk).update(plan=plan)  # written by hand
    if plan:  # the general path decides as it always did: a truthy plan is a plan
        assert _move(session, "coder", user, expected_role="planner").changed
    else:
        with pytest.raises(AcodeError, match="no plan"):
            _move(session, "coder", user, expected_role="planner")
    assert audit_verify().ok


def test_stale_expected_role_and_noop_still_answer_as_before(user: Any) -> None:
    session = _session(user)
    with pytest.raises(AcodeError) as stale:
        _move(session, "planner", user, expected_role="planner")
    assert stale.value.code == "ACODE-ROL-006"
    with pytest.raises(AcodeError) as stale:
        _move(session, "default", user, expected_role="coder")
    assert stale.value.code == "ACODE-ROL-006"
    assert not _move(session, "default", user, expected_role="default").changed
    assert AgentSession.objects.get(pk=session.pk).transition_count == 1
    assert audit_verify().ok


def test_pending_changes_precondition_goes_the_general_way(user: Any) -> None:
    session = _session(user)
    _move(session, "planner", user, expected_role="default")
    services.plan_set(session=session, steps=["step one"], user=user)
    _move(session, "coder", user, expected_role="planner")
    with pytest.raises(AcodeError) as refused:
        _move(session, "reviewer", user, expected_role="coder")
    assert refused.value.details["unmet"] == "the session has no pending changes to review"
    services.change_record(session=session, path="a.py", kind="created", diff="+x\n", user=user)
    assert _move(session, "reviewer", user, expected_role="coder").changed
    assert audit_verify().ok


def test_other_users_are_authorized_on_the_locked_row(user: Any, django_user_model: Any) -> None:
    session = _session(user)
    lead = django_user_model.objects.create_user("lead", "lead@example.com", "pw-lead-123")
    lead.user_permissions.add(Permission.objects.get(codename="act_on_all_sessions"))
    asked: list[AgentSession] = []

    class Refused(Exception):
        pass

    def authorize(locked: AgentSession) -> None:
        asked.append(locked)
        raise Refused

    with pytest.raises(Refused):
        _move(session, "planner", lead, expected_role="default", authorize=authorize)
    assert [s.pk for s in asked] == [session.pk]
    assert AgentSession.objects.get(pk=session.pk).transition_count == 1
    # The owner is never asked about.
    owner_result = _move(session, "planner", user, expected_role="default", authorize=authorize)
    assert owner_result.changed and len(asked) == 1
