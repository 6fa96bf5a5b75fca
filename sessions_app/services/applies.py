"""A command's writes recorded as one unit, and the journal that makes the workspace hold
them even when a worker dies half way.

``SessionJournal`` is the ``containment.ApplyJournal`` of a job: ``begin`` records every
change of a command at once (``changes_track_batch``: one lock, rows written in bulk, one
audit row) together with a ``WorkspaceApply`` row naming the moves left to make; ``end``
deletes that row once they are made. ``workspace_apply_resume`` finishes any apply a dead
worker left (each move is idempotent) before a job's attempt touches the workspace, so a
retried attempt starts from a workspace that holds every change already recorded: the
job's changes count across its attempts.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.db import transaction

from sessions_app.containment import RecordedWrite, Refused, apply_resume, staging_leftovers
from sessions_app.models import AgentSession, AuditEventType, PendingChange, WorkspaceApply
from sessions_app.permissions import SessionAction, action_check
from sessions_app.services.audit import actor_name, session_record
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.locks import lock_session
from sessions_app.services.search_index import search_index_touched
from sessions_app.services.tracking import change_path_check, track_decision

logger = logging.getLogger(__name__)

BATCH = 500
STALE_STAGING = 3600.0
AUDITED_PATHS = 1000
ROW_FIELDS = [
    "kind", "diff", "baseline", "role", "content", "mode", "content_recorded",
    "baseline_content", "baseline_mode", "updated_at",
]  # fmt: skip


@transaction.atomic
def changes_track_batch(
    *,
    session: AgentSession,
    writes: Sequence[RecordedWrite],
    plan: dict[str, Any],
    actor: str | None = None,
    run_id: uuid.UUID | None = None,
) -> WorkspaceApply:
    """Record a command's changes at once (``change_track``'s rule for each), with the
    journal row of the moves left to make; one audit row lists them."""
    for write in writes:
        change_path_check(write.path)
    with lock_session(session.pk) as locked:
        action_check(SessionAction.CHANGE_RECORD, session=locked, run_id=run_id)
        paths = [w.path for w in writes]
        existing: dict[str, PendingChange] = {}
        for start in range(0, len(paths), BATCH):
            chunk = paths[start : start + BATCH]
            existing |= {r.path: r for r in locked.pending_changes.filter(path__in=chunk)}
        rows, gone, kinds = [], [], Counter[str]()
        for write in writes:
            row = existing.get(write.path)
            kind, fields = track_decision(row, write, locked.current_role_id)
            kinds[str(kind)] += 1
            if fields is not None:
                rows.append(PendingChange(session_id=locked.pk, path=write.path, **fields))
            elif row is not None:
                gone.append(row.pk)
        # One upsert for new and changed rows alike (a row keeps its created_at).
        PendingChange.objects.bulk_create(
            rows, batch_size=BATCH, update_conflicts=True, unique_fields=["session", "path"],
            update_fields=ROW_FIELDS,
        )  # fmt: skip
        PendingChange.objects.filter(pk__in=gone).delete()
        journal = WorkspaceApply.objects.create(session=locked, plan=plan)
        session_record(
            locked,
            EventKind.CHANGES_UPDATED,
            event_type=AuditEventType.CHANGE_RECORDED,
            actor=actor_name(None, actor),
            target=", ".join(paths)[:1000],
            result=", ".join(f"{n} {k}" for k, n in sorted(kinds.items())),
            details={
                "cumulative": True, "count": len(writes),
                "changes": {w.path: [w.content, w.mode] for w in writes[:AUDITED_PATHS]},
            },
        )  # fmt: skip
        return journal


class SessionJournal:
    """The ``ApplyJournal`` of one job in one session (``actor``; ``run_id`` the run the
    job is a stage of)."""

    def __init__(self, session: AgentSession, actor: str, run_id: Any = None) -> None:
        self.session, self.actor, self.run_id = session, actor, run_id
        self._open: WorkspaceApply | None = None
        self._paths: list[str] = []

    def begin(self, writes: list[RecordedWrite], plan: dict[str, Any]) -> None:
        self._open = changes_track_batch(
            session=self.session, writes=writes, plan=plan, actor=self.actor, run_id=self.run_id
        )
        self._paths = [w.path for w in writes]

    def end(self) -> None:
        """The moves are made: close the journal (under the session's lock, as it opened);
        the files they touched are indexed again once that commits."""
        if self._open is not None:
            with lock_session(self.session.pk) as locked:
                WorkspaceApply.objects.filter(pk=self._open.pk).delete()
                search_index_touched(Path(locked.workspace), self._paths)
            self._open = None


def workspace_apply_resume(session: AgentSession, layers_root: Path) -> int:
    """Finish every apply a dead worker left in the session's workspace (its moves are
    idempotent), and remove staging a worker left under ``layers_root`` before recording
    anything (older than ``STALE_STAGING`` seconds: a live apply's is younger); how many
    were finished."""
    root = Path(session.workspace)
    left = list(WorkspaceApply.objects.filter(session=session).order_by("id"))
    for row in left:
        try:
            apply_resume(root, row.plan)
        except (OSError, Refused):  # said once, not retried forever
            logger.exception("could not finish apply %s in session %s", row.pk, session.pk)
        WorkspaceApply.objects.filter(pk=row.pk).delete()
    if layers_root.is_dir():  # every journal's staging stays until its session resumes it
        journals = WorkspaceApply.objects.values_list("plan", flat=True)
        keep = {Path(str(plan.get("staging", ""))).name for plan in journals}
        staging_leftovers(layers_root, keep=keep, older_than=STALE_STAGING)
    return len(left)
