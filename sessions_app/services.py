"""Writes to sessions. The API, admin, dashboard, CLI and workers all come through here."""

from __future__ import annotations

import logging
import shutil
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from acode.db import PendingRow, execute_insert, execute_update, pipelined, statement_cursor
from acode.errors import AcodeError
from roles.models import Precondition
from roles.registry import RoleDef, RuleDef, registry
from sessions_app.audit import audit_append, audit_record, head_from, head_request, head_store
from sessions_app.events import publish_session_event
from sessions_app.models import (
    AgentSession,
    AuditEventType,
    ChangeKind,
    PendingChange,
    RiskTier,
    RoleTransition,
    SessionStatus,
    StepStatus,
)
from sessions_app.transition_sql import applicable, transition_in_one_statement

logger = logging.getLogger(__name__)

SYSTEM_ACTORS = ("orchestrator", "system")


def actor_name(user: User | None, actor: str | None = None) -> str:
    """How an actor is recorded: the given label, else the username, else ``system``."""
    if actor:
        return actor
    if user is not None and user.is_authenticated:
        return user.get_username()
    return "system"


def _lock(session_id: Any) -> AgentSession:
    """Lock one session row. No joins: on PostgreSQL ``FOR UPDATE`` would lock the joined
    role rows too (deadlocks between sessions) and re-check the join after waiting (a
    session whose role just changed would seem to vanish)."""
    return AgentSession.objects.select_for_update().get(pk=session_id)


def current_role_of(session: AgentSession) -> RoleDef:
    """The session's current role as the registry knows it (no query)."""
    return registry.by_id(session.current_role_id)


def _record_and_publish(
    session: AgentSession,
    kind: str,
    *,
    event_type: AuditEventType,
    actor: str,
    target: str,
    result: str,
    details: dict[str, Any],
) -> None:
    """Audit a change to a locked session (in its current role) and publish it after commit."""
    audit_record(
        event_type=event_type,
        actor=actor,
        session=session,
        role=current_role_of(session).slug,
        target=target,
        result=result,
        details=details,
    )
    transaction.on_commit(lambda: publish_session_event(session.pk, kind))


# -- creation -------------------------------------------------------------------------
def _make_workspace(session_id: uuid.UUID) -> Path:
    root = Path(settings.ACODE_WORKSPACES_ROOT)
    path = root / str(session_id)
    path.mkdir(parents=True, exist_ok=False)
    git = shutil.which("git")
    if git:
        subprocess.run(
            [git, "init", "--quiet", str(path)], check=True, capture_output=True, timeout=30
        )
    else:  # pragma: no cover - git is a documented requirement
        logger.warning("git not found; workspace %s is a plain directory", path)
    return path


def session_create(
    *,
    owner: User,
    title: str,
    task: str = "",
    workspace: str | None = None,
    risk_tier: str = RiskTier.LOW,
    request_id: str = "",
) -> AgentSession:
    """Open a session in the Default role, with a fresh git workspace or an existing path."""
    session_id = uuid.uuid4()
    managed = workspace is None or workspace == ""
    if not managed:
        path = Path(str(workspace)).expanduser()
        if not path.is_absolute() or not path.is_dir():
            raise AcodeError(
                "ACODE-SES-002",
                f"Workspace {workspace!r} is not an existing directory given as an absolute path.",
                {"workspace": workspace},
            )
        path = path.resolve()
    default = registry.default()
    now = timezone.now()
    with transaction.atomic():
        if managed:
            path = _make_workspace(session_id)
        session = AgentSession.objects.create(
            id=session_id,
            title=title,
            task=task,
            owner=owner,
            workspace=str(path),
            workspace_managed=managed,
            current_role_id=default.id,
            role_version_id=default.version_id,
            role_since=now,
            transition_count=1,
            last_reason="Initial state",
            risk_tier=risk_tier,
        )
        actor = actor_name(owner)
        RoleTransition.objects.create(
            session=session,
            seq=1,
            from_role=None,
            to_role_id=default.id,
            role_version_id=default.version_id,
            reason="Initial state",
            actor=actor,
            user_id=owner.pk,
            request_id=request_id,
            created_at=now,
        )
        audit_record(
            event_type=AuditEventType.SESSION_CREATED,
            actor=actor,
            session=session,
            role=default.slug,
            target=str(session.id),
            result="created",
            details={"title": title, "workspace": str(path), "risk_tier": risk_tier},
        )
        transaction.on_commit(lambda: publish_session_event(session.id, "session.created"))
    return session


# -- transitions ----------------------------------------------------------------------
@dataclass(frozen=True)
class AllowedTransition:
    """A transition out of the current role and whether the session meets it now."""

    rule: RuleDef
    to_name: str
    allowed_now: bool
    unmet: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "to_role": self.rule.to_slug,
            "to_role_name": self.to_name,
            "precondition": self.rule.precondition,
            "condition": self.rule.condition_text,
            "allowed_now": self.allowed_now,
            "unmet": self.unmet,
        }


def _unmet(session: AgentSession, precondition: str) -> str:
    if precondition == Precondition.PLAN_EXISTS and not session.plan:
        return "the session has no plan yet"
    if precondition == Precondition.CHANGES_EXIST and not session.pending_changes.exists():
        return "the session has no pending changes to review"
    return ""


def transitions_from(session: AgentSession) -> list[AllowedTransition]:
    """Every rule out of the session's current role, with whether it can be taken now."""
    current = current_role_of(session)
    out = []
    for rule in registry.rules_from(current.slug):
        unmet = _unmet(session, rule.precondition)
        out.append(AllowedTransition(rule, registry.get(rule.to_slug).name, not unmet, unmet))
    return out


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
    authorize: Callable[[AgentSession], object] | None = None,
) -> TransitionResult:
    """Change a session's role if the rules allow it now; the only way the role changes.

    Locks the session row, checks the rule and its precondition, then writes the
    transition and its audit event in one transaction and publishes after commit.
    A refusal is audited as ``TransitionDenied`` (and committed) before it is raised.
    ``authorize``, when given, sees the locked row first and raises to refuse the caller
    (nothing is written then); it is not asked about the session's owner (``user``),
    who may always act on their own session. Raises ``AgentSession.DoesNotExist`` for
    an unknown id.

    An owner's transition that states ``expected_role`` is first tried as one statement
    on PostgreSQL (``sessions_app.transition_sql``); when that writes nothing, for
    whatever reason, the general path below decides.

    This is the hottest write path (bench/transitions.py), so its statements are sent
    pipelined: BEGIN and the session and audit-head locks in one round trip, every write
    in a second, then COMMIT. (Every outcome but the no-op writes an audit event, so the
    head is locked up front; the no-op holds it only until its empty commit.)
    """
    if not reason or not reason.strip():
        raise AcodeError(
            "ACODE-ROL-007", "A reason is required for every role change.", {"field": "reason"}
        )
    target = registry.get(to_role)  # ACODE-ROL-001 for unknown roles
    expected = registry.get(expected_role) if expected_role else None
    who = actor_name(user, actor)
    session_id = session.pk if isinstance(session, AgentSession) else session
    if expected is not None and expected.slug != target.slug and user is not None:
        done = _try_one_statement(session_id, user, expected, target, reason, who, request_id)
        if done is not None:
            return done
    refusal: AcodeError | None = None
    result: TransitionResult
    with transaction.atomic(), pipelined(), statement_cursor() as cursor:
        # Session first, then the chain head: the order every writer locks them in.
        pending = PendingRow(AgentSession, session_id, for_update=True)
        pending_head = head_request()
        locked = pending.get()
        if locked is None:
            raise AgentSession.DoesNotExist(f"No session {session_id}.")
        if authorize is not None and (user is None or locked.owner_id != user.pk):
            authorize(locked)
        head = head_from(pending_head)
        if isinstance(session, AgentSession) and "owner" in session._state.fields_cache:
            locked.owner = session.owner  # already loaded by the caller; saves a query
        elif user is not None and locked.owner_id == user.pk:
            locked.owner = user
        current = current_role_of(locked)
        if expected is not None and expected.slug != current.slug:
            refusal = AcodeError(
                "ACODE-ROL-006",
                f"Expected the session to be in {expected.name}, but it is in "
                f"{current.name}; nothing was changed.",
                {"expected_role": expected.slug, "current_role": current.slug},
            )
        elif target.slug == current.slug:
            return TransitionResult(
                locked,
                False,
                None,
                f"Session is already in {current.name}; nothing was written.",
            )
        else:
            refusal = _check_rule(locked, current, target)
        if refusal is not None:
            audit_append(
                cursor,
                head,
                event_type=AuditEventType.TRANSITION_DENIED,
                actor=who,
                session=locked,
                role=current.slug,
                target=target.slug,
                result=refusal.code,
                details={"reason": reason, "message": refusal.message, **refusal.details},
            )
        else:
            result = _apply(cursor, locked, current, target, reason, who, user, request_id or "")
            audit_append(
                cursor,
                head,
                event_type=AuditEventType.ROLE_TRANSITION,
                actor=who,
                session=locked,
                role=target.slug,
                target=f"{current.slug}->{target.slug}",
                result="ok",
                details={
                    "from_role": current.slug,
                    "to_role": target.slug,
                    "reason": reason.strip(),
                    "role_version": target.version,
                    "request_id": request_id or "",
                },
            )
        head_store(cursor, head)
    if refusal is not None:
        raise refusal
    return result


def _try_one_statement(
    session_id: Any,
    user: User,
    current: RoleDef,
    target: RoleDef,
    reason: str,
    who: str,
    request_id: str | None,
) -> TransitionResult | None:
    rule = registry.rule(current.slug, target.slug)
    if rule is None or not user.is_authenticated or not applicable("default", rule.precondition):
        return None
    done = transition_in_one_statement(
        session_id=session_id,
        user=user,
        current=current,
        target=target,
        precondition=rule.precondition,
        reason=reason,
        actor=who,
        request_id=request_id or "",
    )
    if done is None:
        return None
    session, transition = done
    _publish_role_change(session, current, target, reason)
    return TransitionResult(
        session, True, transition, f"Role transition: {current.name} → {target.name}"
    )


def _publish_role_change(
    session: AgentSession, current: RoleDef, target: RoleDef, reason: str
) -> None:
    transaction.on_commit(
        lambda: publish_session_event(
            session.pk,
            "role.changed",
            {"from_role": current.slug, "to_role": target.slug, "reason": reason.strip()},
        )
    )


def _check_rule(session: AgentSession, current: RoleDef, target: RoleDef) -> AcodeError | None:
    rule = registry.rule(current.slug, target.slug)
    unmet = "" if rule is None else _unmet(session, rule.precondition)
    if rule is not None and not unmet:
        return None
    options = transitions_from(session)
    if rule is None:
        into = [r for r in registry.all_rules() if r.to_slug == target.slug and not r.implicit]
        sources = ", ".join(f"{registry.get(r.from_slug).name} ({r.condition_text})" for r in into)
        why = next((r.explanation for r in into if r.explanation), "")
        explanation = " ".join(
            part
            for part in (
                why,
                f"{target.name} is entered from: {sources}."
                if into
                else f"No rule leads to {target.name}.",
            )
            if part
        )
        headline = f"Cannot transition from {current.name} to {target.name}. This transition is not allowed."
    else:
        explanation = (
            rule.explanation
            or f"{target.name} requires that {unmet.removeprefix('the session has ')}."
        )
        headline = f"Cannot transition from {current.name} to {target.name}. Preconditions not met: {unmet}."
    valid = [f"{current.name} → {o.to_name} ({o.rule.condition_text})" for o in options]
    return AcodeError(
        "ACODE-ROL-002",
        headline,
        {
            "from_role": current.slug,
            "to_role": target.slug,
            "failed_precondition": (rule.precondition if rule else None),
            "unmet": unmet or None,
            "explanation": explanation,
            "allowed_now": [o.rule.to_slug for o in options if o.allowed_now],
            "valid_transitions": [o.as_dict() for o in options],
            "suggestion": "Valid transitions from " + current.name + ": " + "; ".join(valid),
        },
    )


def _apply(
    cursor: Any,
    session: AgentSession,
    current: RoleDef,
    target: RoleDef,
    reason: str,
    who: str,
    user: User | None,
    request_id: str,
) -> TransitionResult:
    """Send the transition row and the session's new role (the caller audits and commits)."""
    now = timezone.now()
    seq = session.transition_count + 1
    transition = RoleTransition(
        session=session,
        seq=seq,
        from_role_id=current.id,
        to_role_id=target.id,
        role_version_id=target.version_id,
        reason=reason.strip(),
        actor=who,
        user_id=user.pk if user is not None and user.is_authenticated else None,
        request_id=request_id,
        created_at=now,
    )
    execute_insert(cursor, transition)
    # The session row is locked: update it in memory and send the new values, no re-read.
    changes = {
        "current_role_id": target.id,
        "role_version_id": target.version_id,
        "role_since": now,
        "last_reason": reason.strip(),
        "transition_count": seq,
        "updated_at": now,
    }
    for name, value in changes.items():
        setattr(session, name, value)
    execute_update(cursor, AgentSession, session.pk, changes)
    _publish_role_change(session, current, target, reason)
    return TransitionResult(
        session, True, transition, f"Role transition: {current.name} → {target.name}"
    )


# -- plan, changes, details ----------------------------------------------------------
def _normalise_plan(steps: list[Any]) -> list[dict[str, Any]]:
    plan: list[dict[str, Any]] = []
    for number, step in enumerate(steps, start=1):
        if isinstance(step, str):
            step = {"title": step}
        if not isinstance(step, dict) or not str(step.get("title", "")).strip():
            raise AcodeError(
                "ACODE-SES-004",
                f"Plan step {number} needs a non-blank title.",
                {"step": number},
            )
        status = step.get("status", StepStatus.PENDING)
        if status not in StepStatus.values:
            raise AcodeError(
                "ACODE-SES-004",
                f"Plan step {number} has unknown status {status!r}.",
                {"step": number, "allowed": list(StepStatus.values)},
            )
        plan.append(
            {
                "number": number,
                "title": str(step["title"]).strip(),
                "detail": str(step.get("detail", "")),
                "files": [str(f) for f in step.get("files", [])],
                "depends_on": [int(d) for d in step.get("depends_on", [])],
                "status": status,
            }
        )
    return plan


@transaction.atomic
def plan_set(
    *,
    session: AgentSession,
    steps: list[Any],
    actor: str | None = None,
    user: User | None = None,
) -> AgentSession:
    """Set or replace the session plan (ordered steps; an empty list clears it)."""
    locked = _lock(session.pk)
    locked.plan = _normalise_plan(steps)
    locked.save(update_fields=["plan", "updated_at"])
    _record_and_publish(
        locked,
        "plan.updated",
        event_type=AuditEventType.PLAN_UPDATED,
        actor=actor_name(user, actor),
        target="plan",
        result=f"{len(locked.plan)} steps",
        details={"steps": [s["title"] for s in locked.plan]},
    )
    return locked


@transaction.atomic
def plan_step_update(
    *,
    session: AgentSession,
    number: int,
    status: str,
    actor: str | None = None,
    user: User | None = None,
) -> AgentSession:
    """Change one plan step's status."""
    locked = _lock(session.pk)
    if status not in StepStatus.values:
        raise AcodeError(
            "ACODE-SES-004",
            f"Unknown step status {status!r}.",
            {"allowed": list(StepStatus.values)},
        )
    for step in locked.plan:
        if step["number"] == number:
            previous = step["status"]
            step["status"] = status
            break
    else:
        raise AcodeError(
            "ACODE-SES-004",
            f"The plan has no step {number}.",
            {"step": number, "steps": len(locked.plan)},
        )
    locked.save(update_fields=["plan", "updated_at"])
    _record_and_publish(
        locked,
        "plan.updated",
        event_type=AuditEventType.PLAN_UPDATED,
        actor=actor_name(user, actor),
        target=f"plan step {number}",
        result=status,
        details={"step": number, "from": previous, "to": status},
    )
    return locked


@transaction.atomic
def change_record(
    *,
    session: AgentSession,
    path: str,
    kind: str,
    diff: str,
    actor: str | None = None,
    user: User | None = None,
) -> PendingChange:
    """Record (or update) a pending file change awaiting review."""
    if kind not in ChangeKind.values:
        raise AcodeError(
            "ACODE-API-400", f"Unknown change kind {kind!r}.", {"allowed": list(ChangeKind.values)}
        )
    locked = _lock(session.pk)
    change, _ = PendingChange.objects.update_or_create(
        session=locked,
        path=path,
        defaults={"kind": kind, "diff": diff, "role_id": locked.current_role_id},
    )
    _record_and_publish(
        locked,
        "changes.updated",
        event_type=AuditEventType.CHANGE_RECORDED,
        actor=actor_name(user, actor),
        target=path,
        result=kind,
        details={"lines": diff.count("\n")},
    )
    return change


@transaction.atomic
def change_track(
    *,
    session: AgentSession,
    path: str,
    before: str | None,
    after: str | None,
    actor: str | None = None,
) -> PendingChange | None:
    """Record a file change made by a tool, cumulatively since the last approved review.

    The diff is always against the file as it was before this review cycle, so a file
    created and then edited stays "created", and one created then deleted leaves nothing.
    """
    from sessions_app.tools import unified_diff

    locked = _lock(session.pk)
    existing = PendingChange.objects.filter(session=locked, path=path).first()
    baseline = existing.baseline if existing is not None else before
    if baseline is None and after is None:
        if existing is not None:
            existing.delete()
        kind, change = "discarded", None
    elif baseline == after:
        if existing is not None:
            existing.delete()
        kind, change = "reverted", None
    else:
        kind = (
            ChangeKind.CREATED
            if baseline is None
            else (ChangeKind.DELETED if after is None else ChangeKind.MODIFIED)
        )
        change, _ = PendingChange.objects.update_or_create(
            session=locked,
            path=path,
            defaults={
                "kind": kind,
                "diff": unified_diff(path, baseline or "", after or ""),
                "baseline": baseline,
                "role_id": locked.current_role_id,
            },
        )
    _record_and_publish(
        locked,
        "changes.updated",
        event_type=AuditEventType.CHANGE_RECORDED,
        actor=actor_name(None, actor),
        target=path,
        result=str(kind),
        details={"cumulative": True},
    )
    return change


@transaction.atomic
def changes_approve(
    *,
    session: AgentSession,
    summary: str = "",
    actor: str | None = None,
    user: User | None = None,
) -> int:
    """A review approved the pending changes: clear them. Needs ``approve_changes`` in the role."""
    locked = _lock(session.pk)
    role = current_role_of(locked)
    if "approve_changes" not in role.access.permissions:
        raise AcodeError(
            "ACODE-ROL-003",
            f"Approving changes is not allowed in role {role.name}.",
            {"role": role.slug, "missing_permission": "approve_changes"},
        )
    paths = list(locked.pending_changes.values_list("path", flat=True))
    locked.pending_changes.all().delete()
    _record_and_publish(
        locked,
        "changes.updated",
        event_type=AuditEventType.CHANGES_APPROVED,
        actor=actor_name(user, actor),
        target=", ".join(paths)[:1000],
        result=f"{len(paths)} approved",
        details={"paths": paths, "summary": summary},
    )
    return len(paths)


@transaction.atomic
def session_update(
    *,
    session: AgentSession,
    data: dict[str, Any],
    actor: str | None = None,
    user: User | None = None,
) -> AgentSession:
    """Change a session's title, task, risk tier or status (never its role)."""
    allowed = {"title", "task", "risk_tier", "status"}
    if "current_role" in data or "role" in data:
        raise AcodeError(
            "ACODE-SES-003",
            "The role changes only through a transition (POST /api/sessions/{id}/transition/).",
            {"field": "current_role"},
        )
    locked = _lock(session.pk)
    changed = {}
    for key, value in data.items():
        if key in allowed and getattr(locked, key) != value:
            changed[key] = {"from": getattr(locked, key), "to": value}
            setattr(locked, key, value)
    if changed:
        locked.save()
        _record_and_publish(
            locked,
            "session.updated",
            event_type=AuditEventType.SESSION_UPDATED,
            actor=actor_name(user, actor),
            target=", ".join(changed),
            result="updated",
            details=changed,
        )
    return locked


__all__ = [
    "SYSTEM_ACTORS",
    "SessionStatus",
    "change_record",
    "changes_approve",
    "plan_set",
    "plan_step_update",
    "session_create",
    "session_transition",
    "session_update",
    "transitions_from",
]
