"""Writes to pending changes: record them, track a tool's edits, approve them."""

from __future__ import annotations

import difflib
import uuid

from django.contrib.auth.models import User
from django.db import transaction

from acode.errors import AcodeError
from sessions_app.models import AgentSession, AuditEventType, ChangeKind, PendingChange
from sessions_app.permissions import SessionAction, action_check
from sessions_app.services.sessions import (
    actor_name,
    current_role_of,
    lock_session,
    record_and_publish,
)
from sessions_app.services.workspaces import workspace_commit


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}" if before else "/dev/null",
            tofile=f"b/{path}" if after else "/dev/null",
        )
    )


@transaction.atomic
def change_record(
    *,
    session: AgentSession,
    path: str,
    kind: str,
    diff: str,
    actor: str | None = None,
    user: User | None = None,
    run_id: uuid.UUID | None = None,
) -> PendingChange:
    """Record (or update) a pending file change awaiting review (``run_id``: the run
    executing in the session records it; see ``permissions.action_refusal``)."""
    if kind not in ChangeKind.values:
        raise AcodeError(
            "ACODE-API-400", f"Unknown change kind {kind!r}.", {"allowed": list(ChangeKind.values)}
        )
    locked = lock_session(session.pk)
    action_check(SessionAction.CHANGE_RECORD, session=locked, user=user, run_id=run_id)
    change, _ = PendingChange.objects.update_or_create(
        session=locked,
        path=path,
        defaults={"kind": kind, "diff": diff, "role_id": locked.current_role_id},
    )
    record_and_publish(
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
    run_id: uuid.UUID | None = None,
) -> PendingChange | None:
    """Record a file change made by a tool, cumulatively since the last approved review.

    The diff is always against the file as it was before this review cycle, so a file
    created and then edited stays "created", and one created then deleted leaves nothing.
    ``run_id``: the run whose stage's job made it (as in ``change_record``).
    """
    locked = lock_session(session.pk)
    action_check(SessionAction.CHANGE_RECORD, session=locked, run_id=run_id)
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
    record_and_publish(
        locked,
        "changes.updated",
        event_type=AuditEventType.CHANGE_RECORDED,
        actor=actor_name(None, actor),
        target=path,
        result=str(kind),
        details={"cumulative": True},
    )
    return change


def _commit_message(session: AgentSession, summary: str) -> str:
    role = current_role_of(session)
    headline = summary.strip().splitlines()[0][:72] if summary.strip() else "Approved changes"
    return f"{headline}\n\nApproved in role {role.name} of acode session {session.pk}.\n"


@transaction.atomic
def changes_approve(
    *,
    session: AgentSession,
    summary: str = "",
    actor: str | None = None,
    user: User | None = None,
) -> int:
    """A review outside a run approved the pending changes: commit and clear them. Needs
    ``approve_changes`` in the role, and no run executing in the session (a run's changes
    are committed by the run, or at its gate): ``permissions.action_refusal``."""
    locked = lock_session(session.pk)
    action_check(SessionAction.CHANGES_APPROVE, session=locked, user=user)
    return changes_commit(session=locked, summary=summary, actor=actor, user=user)


@transaction.atomic
def changes_commit(
    *,
    session: AgentSession,
    summary: str = "",
    actor: str | None = None,
    user: User | None = None,
    run_id: uuid.UUID | None = None,
) -> int:
    """Commit the pending changes on the session branch and clear them; how many there were.

    The caller decided that they may be committed: a review in a role holding
    ``approve_changes`` (``changes_approve``), a run whose review approved them, or a
    person approving a run at its gate (then ``run_id`` is the run, and ``user`` the
    approver, recorded). While a run executes, only it commits.
    """
    locked = lock_session(session.pk)
    action_check(SessionAction.CHANGES_COMMIT, session=locked, run_id=run_id)
    paths = list(locked.pending_changes.values_list("path", flat=True))
    locked.pending_changes.all().delete()
    commit = workspace_commit(locked, paths, _commit_message(locked, summary))
    record_and_publish(
        locked,
        "changes.updated",
        event_type=AuditEventType.CHANGES_APPROVED,
        actor=actor_name(user, actor),
        target=", ".join(paths)[:1000],
        result=f"{len(paths)} approved",
        details={"paths": paths, "summary": summary, "commit": commit},
    )
    return len(paths)
