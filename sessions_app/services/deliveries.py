"""What approved work became: the commit on the session branch, recorded so the pages,
the API and the CLI can show it (sha, message, branch, files, patch), and pushed to the
repository's remote as ``acode/<session>`` where an administrator marked it pushable.

A push runs in a Celery task after the commit's transaction (never while the session is
locked); whatever the remote says, the commit stands. Its outcome is audited
(``BranchPushed``) and pushed live; credentials in the remote's URL never leave git.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from sessions_app.models import (
    AgentSession,
    AuditEventType,
    DeliveredCommit,
    PendingChange,
    PushStatus,
)
from sessions_app.services.audit import audit_record, current_role_of, publish_session_event
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.locks import lock_session
from sessions_app.services.workspaces import masked_remote, workspace_push
from sessions_app.tasks import push_branch_task  # service -> task; tasks import services lazily

logger = logging.getLogger(__name__)

PUSHER = "acode"


def diff_stat(diff: str) -> tuple[int, int]:
    """(lines added, lines removed) of a unified diff."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            continue
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def _files(changes: Sequence[PendingChange]) -> list[dict[str, object]]:
    files = []
    for change in changes:
        added, removed = diff_stat(change.diff)
        files.append({"path": change.path, "kind": change.kind, "added": added, "removed": removed})
    return files


def delivered_applied_record(
    *,
    session: AgentSession,
    message: str,
    approved: Sequence[PendingChange],
    approved_by: str,
    run_id: uuid.UUID | None = None,
) -> DeliveredCommit:
    """Record an approval in an attached directory: the changes are there already (applied
    when made) and nothing is committed; the pages, API and CLI show it as such."""
    return DeliveredCommit.objects.create(
        session=session, run_id=run_id, sha="", branch="", committed=False, message=message,
        files=_files(approved), approved_by=approved_by, push_status=PushStatus.NONE,
    )  # fmt: skip


def delivered_commit_record(
    *,
    session: AgentSession,
    sha: str,
    message: str,
    committed: Sequence[PendingChange],
    approved_by: str,
    run_id: uuid.UUID | None = None,
) -> DeliveredCommit:
    """Record a commit just made on the locked ``session``'s branch from ``committed``, and
    queue its push (after commit) when the session's repository is pushable."""
    files = _files(committed)
    repository = session.repository
    pushable = repository is not None and repository.pushable
    commit = DeliveredCommit.objects.create(
        session=session,
        run_id=run_id,
        sha=sha,
        branch=session.branch,
        message=message,
        files=files,
        approved_by=approved_by,
        push_status=PushStatus.PENDING if pushable else PushStatus.NONE,
        push_remote=masked_remote(repository.source) if pushable and repository else "",
    )
    if pushable:
        transaction.on_commit(lambda: _enqueue_push(commit.pk))
    return commit


def _enqueue_push(commit_id: int) -> None:
    from kombu.exceptions import OperationalError as BrokerUnreachable
    from redis.exceptions import RedisError

    try:
        push_branch_task.apply_async(args=(commit_id,), ignore_result=True)
    except (BrokerUnreachable, RedisError) as exc:
        # It stays pending: the periodic sweep (deliveries_push_stalled) sends it again.
        logger.warning("could not queue the push of commit %s (retried later): %s", commit_id, exc)


def delivered_commit_push(commit_id: int) -> DeliveredCommit | None:
    """Push the session branch of a pending delivered commit to its repository's remote
    and record how it went (once, however often the task is delivered)."""
    commit = (
        DeliveredCommit.objects.select_related("session__repository").filter(pk=commit_id).first()
    )
    if commit is None or commit.push_status != PushStatus.PENDING:
        return commit
    repository = commit.session.repository
    if repository is None or not repository.pushable:
        outcome_ok, message = False, "The repository is no longer marked pushable."
        remote = commit.push_remote
    else:
        pushed = workspace_push(commit.session, repository.source)  # no lock held: network
        outcome_ok, message, remote = pushed.ok, pushed.message, pushed.remote
    with transaction.atomic(), lock_session(commit.session_id) as session:
        commit = DeliveredCommit.objects.select_for_update().get(pk=commit_id)
        if commit.push_status != PushStatus.PENDING:
            return commit  # another delivery of the task recorded it meanwhile
        commit.push_status = PushStatus.PUSHED if outcome_ok else PushStatus.FAILED
        commit.push_remote = remote
        commit.push_message = message
        commit.pushed_at = timezone.now() if outcome_ok else None
        commit.save(update_fields=["push_status", "push_remote", "push_message", "pushed_at"])
        audit_record(
            event_type=AuditEventType.BRANCH_PUSHED,
            actor=PUSHER,
            session=session,
            role=current_role_of(session).slug,
            target=commit.branch,
            result=commit.push_status,
            details={"commit": commit.sha, "remote": remote, "message": message[-1000:]},
        )
        data = {"commit": commit.sha, "push_status": commit.push_status}
        transaction.on_commit(
            lambda: publish_session_event(commit.session_id, EventKind.COMMIT_PUSHED, data)
        )
    if not outcome_ok:
        logger.warning("push of %s to %s failed: %s", commit.branch, remote, message)
    return commit


def deliveries_push_stalled() -> list[int]:
    """Send again the pushes still pending after the job re-send delay (a lost message,
    a broker that was away when the commit was made)."""
    cutoff = timezone.now() - timedelta(seconds=settings.ACODE_JOB_RESEND_SECONDS)
    stalled = list(
        DeliveredCommit.objects.filter(
            push_status=PushStatus.PENDING, created_at__lt=cutoff
        ).values_list("pk", flat=True)[:100]
    )
    for pk in stalled:
        _enqueue_push(pk)
    return stalled
