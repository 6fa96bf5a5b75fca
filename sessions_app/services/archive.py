"""Archiving a session: its files freed, its record kept; restoring it.

Every session keeps a checkout, a layer of what its commands left at ignored paths, and
indexes (which files hold secrets, the search index) in server state, and a backlog makes
one session per task. Archiving frees all of them and keeps what cannot be made again: the
git directory (every delivered commit, the content of every pending change) and the
session's history, audit chain, runs and jobs. An archived session is read-only: every
action but seeing it, archiving it and restoring it is refused (``permissions.now_refusal``,
ACODE-SES-007). Archiving waits for the session to be idle (no run executing, no job
queued or running: ACODE-SES-008).

Restoring checks the branch out again and puts back every pending change's recorded
content, so the checkout holds what it held; what the layer kept (caches, build output, a
virtual environment) is made again by the next command that needs it. An attached
directory is never removed: archiving it frees only acode's own layer of the session.

A session's layer lives on the host that ran its commands (``ACODE_LAYERS_ROOT`` is local
to a worker): archiving frees the copy on the host that archives, and every worker frees
the others when it starts (``layers_sweep``; ``manage.py acode_free_layers`` runs it on
demand, e.g. from a timer on each worker host).

The files are freed after the archive is committed, under the session's lock again, and
only while it is still archived: a restore in between wins, and a checkout is renamed away
before it is removed, so it is either whole or gone.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import uuid
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from acode.errors import AcodeError
from sessions_app.containment import (
    ContentStore,
    WorkspaceFS,
    branch_head,
    index_remove,
    session_layer_path,
    workspace_key,
)
from sessions_app.models import AgentSession, AuditEventType, ChangeKind, SessionStatus
from sessions_app.permissions import SessionAction, action_check
from sessions_app.services.audit import actor_name, session_record
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.locks import lock_session
from sessions_app.services.search_index import index_dir, search_index_queue
from sessions_app.services.workspaces import (
    git_checked,
    git_dir_of,
    session_git_dir,
    workspace_prepare,
)

logger = logging.getLogger(__name__)


def session_archive(
    *, session: AgentSession, user: User | None = None, actor: str = ""
) -> AgentSession:
    """Archive the session and free its files (see the module docstring). Archiving an
    archived session changes nothing."""
    with transaction.atomic(), lock_session(session.pk) as locked:
        action_check(SessionAction.SESSION_ARCHIVE, session=locked, user=user)
        if locked.status == SessionStatus.ARCHIVED:
            return locked
        _status_set(locked, SessionStatus.ARCHIVED, "archived", actor_name(user, actor))
        transaction.on_commit(lambda: _free_if_archived(locked.pk))
    return locked


def session_restore(
    *, session: AgentSession, user: User | None = None, actor: str = ""
) -> AgentSession:
    """Make an archived session active again, its checkout as it was; a session that is
    not archived is left as it is."""
    with transaction.atomic(), lock_session(session.pk) as locked:
        action_check(SessionAction.SESSION_RESTORE, session=locked, user=user)
        if locked.status != SessionStatus.ARCHIVED:
            return locked
        workspace_restore(locked)
        _status_set(locked, SessionStatus.ACTIVE, "restored", actor_name(user, actor))
    return locked


def _status_set(session: AgentSession, status: str, result: str, actor: str) -> None:
    """Write the new status and record it (audited; every open page re-renders)."""
    before, session.status = session.status, status
    session.save(update_fields=["status", "updated_at"])
    session_record(
        session,
        EventKind.SESSION_ARCHIVED,
        event_type=AuditEventType.SESSION_UPDATED,
        actor=actor,
        target="status",
        result=result,
        details={"status": {"from": before, "to": status}},
    )


def _free_if_archived(session_id: uuid.UUID) -> None:
    with transaction.atomic(), lock_session(session_id) as locked:
        if locked.status == SessionStatus.ARCHIVED:
            workspace_free(locked)


def workspace_free(session: AgentSession) -> None:
    """Remove what the session keeps that can be made again: its layer, and for a checkout
    acode made, the checkout and its indexes (an attached directory's are shared)."""
    layer = session_layer_path(Path(settings.ACODE_LAYERS_ROOT), str(session.pk))
    indexes, freed = [layer.with_name(f"{layer.name}.index")], [layer]
    path = Path(session.workspace)
    if session.workspace_managed and path.is_dir():
        session_git_dir(session)  # a checkout of the old layout: its .git moved out first
        indexes.append(Path(settings.ACODE_INDEX_ROOT) / workspace_key(path))
        gone = path.with_name(f".{path.name}.freed-{uuid.uuid4().hex[:8]}")
        freed += [index_dir(path), gone]
        path.rename(gone)  # the checkout is whole or gone, never half removed
    for home in indexes:
        index_remove(home)
    for each in freed:
        shutil.rmtree(each, ignore_errors=True)
    logger.info("session %s archived: its files are freed", session.pk)


def workspace_restore(session: AgentSession) -> None:
    """Check the session's branch out again where it was, with every pending change's
    recorded content on top; nothing to do for an attached directory or a checkout that
    was never freed."""
    path = Path(session.workspace)
    git_dir = session_git_dir(session) or git_dir_of(session.pk)
    if not session.workspace_managed or path.exists() or not git_dir.is_dir():
        return
    # Built beside it and renamed into place: a restore that fails leaves nothing behind
    # that a second one would take for a checkout never freed.
    staging = path.with_name(f".{path.name}.restoring-{uuid.uuid4().hex[:8]}")
    staging.mkdir(parents=True)
    try:
        if session.branch and branch_head(git_dir, session.branch):
            git_checked(
                git_dir, "checkout", "--quiet", "--force", session.branch, work_tree=staging
            )
        _pending_written(session, git_dir, staging)
        staging.rename(path)
    except (AcodeError, KeyError, OSError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, AcodeError):
            raise
        raise AcodeError("ACODE-SES-006", f"Could not restore the workspace: {exc!r}", {}) from exc
    workspace_prepare(git_dir, path)
    search_index_queue(path)


def _pending_written(session: AgentSession, git_dir: Path, root: Path) -> None:
    """Every pending change's recorded content (a delete: the file gone) under ``root``."""
    store = ContentStore(git_dir)
    with WorkspaceFS(root) as fs:
        for change in session.pending_changes.filter(content_recorded=True):
            if change.kind == ChangeKind.DELETED or not change.content:
                with contextlib.suppress(FileNotFoundError):
                    fs.delete(change.path)
            else:
                mode = 0o755 if change.mode & 0o111 else 0o644
                fs.write_bytes(change.path, store.get(change.content), mode=mode)


def layers_sweep() -> list[str]:
    """Free the layers on this host of sessions that are archived or no longer exist; the
    ids of the sessions whose layers were freed."""
    root = Path(settings.ACODE_LAYERS_ROOT) / "sessions"
    found: dict[str, Path] = {}
    for entry in root.glob("*") if root.is_dir() else []:
        name = entry.name.removesuffix(".index")
        with contextlib.suppress(ValueError):
            found[str(uuid.UUID(name))] = root / name
    kept = AgentSession.objects.filter(pk__in=list(found)).exclude(status=SessionStatus.ARCHIVED)
    freed = sorted(set(found) - {str(pk) for pk in kept.values_list("pk", flat=True)})
    for session_id in freed:
        layer = found[session_id]
        index_remove(layer.with_name(f"{layer.name}.index"))
        shutil.rmtree(layer, ignore_errors=True)
    return freed
