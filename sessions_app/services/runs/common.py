"""What every part of a run uses: its lock, its audit rows and live events, pausing."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from roles.registry import registry
from sessions_app.models import (
    AgentSession,
    AuditEventType,
    Run,
)
from sessions_app.models.states import status_move
from sessions_app.services.audit import audit_record
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.events import publish_session_event

ORCHESTRATOR = "orchestrator"


def lock_run(run_id: Any) -> Run:
    """Lock one run row, read with its template (which is not locked)."""
    return Run.objects.select_for_update(of=("self",)).select_related("template").get(pk=run_id)


def publish_run(run: Run, kind: EventKind = EventKind.RUN_UPDATED) -> None:
    data = {"run": str(run.pk), "status": run.status}
    transaction.on_commit(lambda: publish_session_event(run.session_id, kind, data))


def run_audit(run: Run, session: AgentSession, result: str, **details: Any) -> None:
    audit_record(
        event_type=AuditEventType.RUN_EVENT,
        actor=ORCHESTRATOR,
        session=session,
        role=registry.by_id(session.current_role_id).slug,
        target=f"run {run.pk}",
        result=result,
        details=details,
    )


def run_pause(run: Run, session: AgentSession, status: str, message: str) -> None:
    """The run waits (for an answer, an approval, a decision), saying why."""
    status_move(run, status, message=message)
    run_audit(run, session, status, message=message)
    publish_run(run)
