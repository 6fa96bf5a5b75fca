"""Writes to pending changes: record them, track a tool's edits, approve them."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from acode.errors import AcodeError
from acode.text import headline
from sessions_app.containment import RecordedWrite
from sessions_app.models import AgentSession, AuditEventType, ChangeKind, PendingChange
from sessions_app.permissions import SessionAction, action_check
from sessions_app.services.audit import actor_name, current_role_of, session_record
from sessions_app.services.deliveries import delivered_applied_record, delivered_commit_record
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.locks import lock_session
from sessions_app.services.search_index import search_index_touched
from sessions_app.services.tracking import change_path_check, track_decision
from sessions_app.services.workspaces import ApprovedChange, workspace_commit

DIGEST_FIELDS = ("path", "kind", "diff", "content", "mode", "content_recorded")


def changes_digest(rows: Iterable[Any]) -> str:
    """The one digest of pending changes: every change's path, kind, diff, recorded content
    id and mode, in path order. Every approval is bound to it (a run's gate through
    ``runs.engine.approval_digest``); commits are built from the same rows. ``rows`` are
    ``PendingChange`` rows or tuples of ``DIGEST_FIELDS``."""
    values = [
        row if isinstance(row, tuple) else tuple(getattr(row, f) for f in DIGEST_FIELDS)
        for row in rows
    ]
    return hashlib.sha256(json.dumps(sorted(values)).encode()).hexdigest()


def pending_digest(session: AgentSession) -> str:
    """``changes_digest`` of what is pending in ``session`` now."""
    return changes_digest(session.pending_changes.values_list(*DIGEST_FIELDS))


@dataclass(frozen=True)
class PendingSnapshot:
    """What is pending at one moment: each path's diff (what a reviewer is shown) and the
    digest of exactly those changes."""

    diffs: dict[str, str]
    digest: str


def pending_snapshot(session: AgentSession) -> PendingSnapshot:
    """The pending changes' diffs and their digest, read together (one query)."""
    rows = list(session.pending_changes.values_list(*DIGEST_FIELDS))
    return PendingSnapshot({r[0]: r[2] for r in rows}, changes_digest(rows))


def changes_check_digest(session: AgentSession, digest: str) -> None:
    """An approval binds what the approver saw: ``digest`` must be what is pending now."""
    current = pending_digest(session)
    if digest != current:
        raise AcodeError(
            "ACODE-CHG-002",
            "The pending changes are not the ones you approved (they changed after you "
            "looked, or the digest is wrong); nothing was committed. Look at them again and "
            "approve what you reviewed.",
            {"approved": digest[:100], "digest": current},
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
    """Record (or update) a pending file change awaiting review, described by hand: it
    carries no recorded content, so approval does not commit it (``run_id``: the run
    executing in the session records it; see ``permissions.action_refusal``)."""
    change_path_check(path)
    if kind not in ChangeKind.values:
        raise AcodeError(
            "ACODE-API-400", f"Unknown change kind {kind!r}.", {"allowed": list(ChangeKind.values)}
        )
    with lock_session(session.pk) as locked:
        action_check(SessionAction.CHANGE_RECORD, session=locked, user=user, run_id=run_id)
        change, _ = PendingChange.objects.update_or_create(
            session=locked,
            path=path,
            defaults={
                "kind": kind, "diff": diff, "role_id": locked.current_role_id,
                "content": "", "mode": 0, "content_recorded": False,
            },
        )  # fmt: skip
        session_record(
            locked,
            EventKind.CHANGES_UPDATED,
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
    write: RecordedWrite,
    actor: str | None = None,
    run_id: uuid.UUID | None = None,
) -> PendingChange | None:
    """Record a file change the server made (``WorkspaceWriter``), cumulatively since the
    last approved review, with exactly the content written.

    The diff is always against the file as it was before this review cycle, so a file
    created and then edited stays "created", and one created then deleted leaves nothing.
    ``run_id``: the run whose stage's job made it (as in ``change_record``).
    """
    change_path_check(write.path)
    path = write.path
    with lock_session(session.pk) as locked:
        action_check(SessionAction.CHANGE_RECORD, session=locked, run_id=run_id)
        existing = PendingChange.objects.filter(session=locked, path=path).first()
        kind, defaults = track_decision(existing, write, locked.current_role_id)
        change = None
        if defaults is None:
            if existing is not None:
                existing.delete()
        else:
            change, _ = PendingChange.objects.update_or_create(
                session=locked, path=path, defaults=defaults
            )
        session_record(
            locked,
            EventKind.CHANGES_UPDATED,
            event_type=AuditEventType.CHANGE_RECORDED,
            actor=actor_name(None, actor),
            target=path,
            result=str(kind),
            details={"cumulative": True, "content": write.content, "mode": write.mode},
        )
        search_index_touched(Path(locked.workspace), [path])  # once committed
        return change


def _commit_message(session: AgentSession, summary: str, approver: str) -> str:
    role = current_role_of(session)
    subject = headline(summary, 72) or "Approved changes"  # never cut mid-word
    return (
        f"{subject}\n\nApproved by {approver}, in role {role.name} of acode session {session.pk}.\n"
    )


def _approver(session: AgentSession, user: User | None, who: str, run_id: uuid.UUID | None) -> str:
    """Who approved a commit: the person, else the role whose review approved it in a run."""
    if user is not None and user.is_authenticated:
        return user.get_username()
    if run_id is not None:
        return f"{current_role_of(session).name} (the run's review)"
    return who


@dataclass(frozen=True)
class ApprovalOutcome:
    """What approving did: how many changes, the commit made ("" when none), its branch,
    and the same in words (``outcome``)."""

    approved: int
    commit: str
    branch: str
    outcome: str


@transaction.atomic
def changes_approve(
    *,
    session: AgentSession,
    digest: str,
    summary: str = "",
    actor: str | None = None,
    user: User | None = None,
) -> ApprovalOutcome:
    """A review outside a run approved the pending changes whose digest it saw
    (``pending_digest``): commit and clear them. Needs ``approve_changes`` in the role, and
    no run executing in the session (a run's changes are committed by the run, or at its
    gate): ``permissions.action_refusal``. Other changes than ``digest`` names: 409
    ACODE-CHG-002, nothing committed."""
    with lock_session(session.pk) as locked:
        # It covers changes_commit's question too (no run holds the session): asked once.
        action_check(SessionAction.CHANGES_APPROVE, session=locked, user=user)
        return _commit(locked, digest, summary, actor, user, None)


@transaction.atomic
def changes_commit(
    *,
    session: AgentSession,
    digest: str,
    summary: str = "",
    actor: str | None = None,
    user: User | None = None,
    run_id: uuid.UUID | None = None,
) -> ApprovalOutcome:
    """Commit the pending changes on the session branch and clear them; what was done.

    The commit holds exactly the content recorded with each change (what the approval's
    digest covered), on top of the branch: never what the work tree holds. Changes
    described by hand carry no content and are listed as not committed. The caller decided
    that they may be committed: a review in a role holding ``approve_changes``
    (``changes_approve``), a run whose review approved them, or a person approving a run
    at its gate (then ``run_id`` is the run, and ``user`` the approver, recorded). While a
    run executes, only it commits. ``digest`` is what the approver saw (``pending_digest``);
    when the pending changes differ, nothing is committed (409 ACODE-CHG-002).
    """
    with lock_session(session.pk) as locked:
        action_check(SessionAction.CHANGES_COMMIT, session=locked, run_id=run_id)
        return _commit(locked, digest, summary, actor, user, run_id)


def _commit(
    locked: AgentSession,
    digest: str,
    summary: str,
    actor: str | None,
    user: User | None,
    run_id: uuid.UUID | None,
) -> ApprovalOutcome:
    """``changes_commit``'s work, on the session its caller locked and checked."""
    changes_check_digest(locked, digest)
    rows = list(locked.pending_changes.order_by("path"))
    approved = [
        ApprovedChange(r.path, "" if r.kind == ChangeKind.DELETED else r.content, r.mode)
        for r in rows
        if r.content_recorded
    ]
    described = [r.path for r in rows if not r.content_recorded]
    paths = [r.path for r in rows]
    who = actor_name(user, actor)
    approver = _approver(locked, user, who, run_id)
    message = _commit_message(locked, summary, approver)
    commit = workspace_commit(locked, approved, message)
    recorded = [r for r in rows if r.content_recorded]
    if commit:
        delivered_commit_record(
            session=locked, sha=commit, message=message, committed=recorded,
            approved_by=approver, run_id=run_id,
        )  # fmt: skip
    elif recorded and not locked.workspace_managed:  # there already: said so, not committed
        delivered_applied_record(
            session=locked, message=message, approved=recorded, approved_by=approver,
            run_id=run_id,
        )  # fmt: skip
    locked.pending_changes.all().delete()
    session_record(
        locked,
        EventKind.CHANGES_COMMITTED if commit else EventKind.CHANGES_UPDATED,
        event_type=AuditEventType.CHANGES_APPROVED,
        actor=who,
        target=", ".join(paths)[:1000],
        result=f"{len(paths)} approved",
        details=_approval_details(locked, paths, summary, commit, approved, described),
    )
    return ApprovalOutcome(len(paths), commit, locked.branch if commit else "",
                           _outcome_words(locked, commit, bool(approved)))  # fmt: skip


def _approval_details(
    session: AgentSession,
    paths: list[str],
    summary: str,
    commit: str,
    approved: list[ApprovedChange],
    described: list[str],
) -> dict[str, Any]:
    return {
        "paths": paths,
        "summary": summary,
        "commit": commit,
        "branch": session.branch if commit else "",
        "committed": {c.path: c.content for c in approved},
        "not_committed": described,
    }


def _outcome_words(session: AgentSession, commit: str, recorded: bool) -> str:
    """What an approval did, in words every route shows the same."""
    if commit:
        return f"committed as {commit[:12]} on branch {session.branch}."
    if not session.workspace_managed:
        return (
            f"they are in the attached directory {session.workspace}, where they were applied "
            "when made; nothing was committed (acode commits only in workspaces it created)."
        )
    if not recorded:
        return "nothing was committed: changes described by hand carry no content."
    return "nothing was committed: the approved changes leave the branch as it was."
