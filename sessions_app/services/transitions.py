"""Role transitions: the one decision (``transition_decide``) and the one writer
(``session_transition``). Nothing else changes a session's role.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from acode.errors import AcodeError
from acode.inputs import is_blank
from roles.models import Precondition
from roles.registry import RoleDef, RuleDef, registry
from roles.services.agents import routing_matches
from sessions_app.models import AgentSession, AuditEventType, RoleTransition
from sessions_app.permissions import SessionAction, access_refusal, now_refusal, run_acting
from sessions_app.services.audit import (
    actor_name,
    audit_record,
    current_role_of,
    session_record,
)
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.locks import lock_session


def _needs_plan(session: AgentSession) -> str:
    return "" if session.plan else "the session has no plan yet"


def _needs_changes(session: AgentSession) -> str:
    if session.pending_changes.exists():
        return ""
    return "the session has no pending changes to review"


# What each precondition a rule may name requires of the (locked) session: "" when met,
# else why not. A precondition missing here is never met.
PRECONDITIONS: dict[str, Callable[[AgentSession], str]] = {
    Precondition.NONE: lambda session: "",
    Precondition.PLAN_EXISTS: _needs_plan,
    Precondition.CHANGES_EXIST: _needs_changes,
}


def precondition_unmet(session: AgentSession, precondition: str) -> str:
    """Why ``precondition`` does not hold for the session now ('' when it does)."""
    check = PRECONDITIONS.get(precondition)
    if check is None:
        return f"the precondition {precondition!r} is unknown"
    return check(session)


@dataclass(frozen=True)
class AllowedTransition:
    """A transition out of the current role and whether the session meets it now."""

    rule: RuleDef
    to_name: str
    allowed_now: bool
    unmet: str
    suggested_for: tuple[str, ...] = ()  # the target agent's routing keywords in the task

    def as_dict(self) -> dict[str, Any]:
        return {
            "to_role": self.rule.to_slug,
            "to_role_name": self.to_name,
            "precondition": self.rule.precondition,
            "condition": self.rule.condition_text,
            "allowed_now": self.allowed_now,
            "unmet": self.unmet,
            "suggested_for": list(self.suggested_for),
        }


def transitions_from(session: AgentSession) -> list[AllowedTransition]:
    """Every rule out of the session's current role, with whether it can be taken now and
    which of the target agent's routing keywords the session's title and task name."""
    rules = registry.rules_from(current_role_of(session).slug)
    agents = [r.to_slug for r in rules if registry.get(r.to_slug).spec.custom]
    matches = routing_matches(f"{session.title}\n{session.task}", agents) if agents else {}
    out = []
    for rule in rules:
        unmet = precondition_unmet(session, rule.precondition)
        name = registry.get(rule.to_slug).name
        out.append(AllowedTransition(rule, name, not unmet, unmet, matches.get(rule.to_slug, ())))
    return out


@dataclass(frozen=True)
class TransitionDecision:
    """What ``transition_decide`` concluded: nothing to do, a refusal, or go ahead."""

    noop: bool = False
    refusal: AcodeError | None = None


def transition_decide(
    *,
    session: AgentSession,
    current: RoleDef,
    target: RoleDef,
    expected: RoleDef | None,
    run_id: uuid.UUID | None = None,
) -> TransitionDecision:
    """May the (locked) session go from ``current`` to ``target`` now? The only place this
    is decided: the API, dashboard, CLI, admin, workers and runs all come through here.

    Whether anything may change the session now is the one decision for every action on a
    session (``permissions.now_refusal``): while a run is in progress only that run
    (``run_id``) moves the session, so nobody skips or reorders its stages. Who may is
    asked before, by ``session_transition``."""
    refused = now_refusal(SessionAction.TRANSITION, session=session, run_id=run_id)
    if refused is not None:
        refused.details.setdefault("current_role", current.slug)
        return TransitionDecision(refusal=refused)
    if expected is not None and expected.slug != current.slug:
        return TransitionDecision(
            refusal=AcodeError(
                "ACODE-ROL-006",
                f"Expected the session to be in {expected.name}, but it is in "
                f"{current.name}; nothing was changed.",
                {"expected_role": expected.slug, "current_role": current.slug},
            )
        )
    if target.slug == current.slug:
        return TransitionDecision(noop=True)
    rule = registry.rule(current.slug, target.slug)
    unmet = "" if rule is None else precondition_unmet(session, rule.precondition)
    if rule is not None and not unmet:
        return TransitionDecision()
    return TransitionDecision(refusal=_refusal(session, current, target, rule, unmet))


def _refusal(
    session: AgentSession, current: RoleDef, target: RoleDef, rule: RuleDef | None, unmet: str
) -> AcodeError:
    options = transitions_from(session)
    if rule is None:
        into = [r for r in registry.all_rules() if r.to_slug == target.slug and not r.implicit]
        sources = ", ".join(f"{registry.get(r.from_slug).name} ({r.condition_text})" for r in into)
        why = next((r.explanation for r in into if r.explanation), "")
        entered = (
            f"{target.name} is entered from: {sources}."
            if into
            else f"No rule leads to {target.name}."
        )
        explanation = f"{why} {entered}".strip()
        headline = (
            f"Cannot transition from {current.name} to {target.name}. "
            "This transition is not allowed."
        )
    else:
        explanation = (
            rule.explanation
            or f"{target.name} requires that {unmet.removeprefix('the session has ')}."
        )
        headline = (
            f"Cannot transition from {current.name} to {target.name}. "
            f"Preconditions not met: {unmet}."
        )
    valid = [f"{current.name} → {o.to_name} ({o.rule.condition_text})" for o in options]
    return AcodeError(
        "ACODE-ROL-002",
        headline,
        {
            "from_role": current.slug,
            "to_role": target.slug,
            "failed_precondition": rule.precondition if rule else None,
            "unmet": unmet or None,
            "explanation": explanation,
            "allowed_now": [o.rule.to_slug for o in options if o.allowed_now],
            "valid_transitions": [o.as_dict() for o in options],
            "suggestion": f"Valid transitions from {current.name}: " + "; ".join(valid),
        },
    )


@dataclass(frozen=True)
class TransitionResult:
    """What ``session_transition`` did."""

    session: AgentSession
    changed: bool
    transition: RoleTransition | None
    message: str


def session_transition(
    *,
    session: AgentSession | uuid.UUID | str,
    to_role: str,
    reason: str,
    actor: str | None = None,
    user: User | None = None,
    expected_role: str | None = None,
    request_id: str | None = None,
    run_id: uuid.UUID | None = None,
) -> TransitionResult:
    """Change a session's role if ``transition_decide`` allows it; the only way it changes.

    Locks the session row, asks who may (``permissions.access_refusal``, as ``session_for``
    would: refused unaudited), decides, writes the transition, the new role and the audit
    event in one transaction and publishes after commit; a refused transition is audited (``TransitionDenied``) first.
    ``run_id``: the run executing in the session. Raises ``DoesNotExist`` for an unknown id.
    """
    if not reason or is_blank(reason):  # zero-width spaces are no reason either
        raise AcodeError(
            "ACODE-ROL-007", "A reason is required for every role change.", {"field": "reason"}
        )
    target = registry.get(to_role)  # ACODE-ROL-001 for unknown roles
    expected = registry.get(expected_role) if expected_role else None
    who = actor_name(user, actor)
    session_id = session.pk if isinstance(session, AgentSession) else session
    with lock_session(session_id) as locked:
        if user is not None and not run_acting(locked, run_id):
            refused = access_refusal(user, SessionAction.TRANSITION, locked)
            if refused is not None:
                raise refused
        if user is not None and locked.owner_id == user.pk:
            locked.owner = user  # the answer shows the owner: no second read
        current = current_role_of(locked)
        decision = transition_decide(
            session=locked,
            current=current,
            target=target,
            expected=expected,
            run_id=run_id,
        )
        if decision.noop:
            message = f"Session is already in {current.name}; nothing was written."
            return TransitionResult(locked, False, None, message)
        if decision.refusal is None:
            return _apply(locked, current, target, reason.strip(), who, user, request_id or "")
        refusal = decision.refusal
        audit_record(
            event_type=AuditEventType.TRANSITION_DENIED,
            actor=who,
            session=locked,
            role=current.slug,
            target=target.slug,
            result=refusal.code,
            details={"reason": reason, "message": refusal.message, **refusal.details},
        )
    raise refusal


def _apply(
    session: AgentSession,
    current: RoleDef,
    target: RoleDef,
    reason: str,
    who: str,
    user: User | None,
    request_id: str,
) -> TransitionResult:
    """Write the transition, the session's new role and the audit event; publish after commit."""
    now = timezone.now()
    seq = session.transition_count + 1
    transition = RoleTransition.objects.create(
        session=session,
        seq=seq,
        from_role_id=current.id,
        to_role_id=target.id,
        role_version_id=target.version_id,
        reason=reason,
        actor=who,
        user_id=user.pk if user is not None and user.is_authenticated else None,
        request_id=request_id,
        created_at=now,
    )
    session.current_role_id = target.id
    session.role_version_id = target.version_id
    session.role_since = now
    session.last_reason = reason
    session.transition_count = seq
    session_record(  # in the new role: the session's row already says it
        session,
        EventKind.ROLE_CHANGED,
        event_type=AuditEventType.ROLE_TRANSITION,
        actor=who,
        target=f"{current.slug}->{target.slug}",
        result="ok",
        details={
            "from_role": current.slug,
            "to_role": target.slug,
            "reason": reason,
            "role_version": target.version,
            "request_id": request_id,
        },
        data={"from_role": current.slug, "to_role": target.slug, "reason": reason},
    )
    session.save(
        update_fields=[
            "current_role",
            "role_version",
            "role_since",
            "last_reason",
            "transition_count",
            "updated_at",
        ]
    )
    return TransitionResult(
        session, True, transition, f"Role transition: {current.name} → {target.name}"
    )
