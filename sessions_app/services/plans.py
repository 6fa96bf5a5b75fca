"""Writes to a session's plan: set it, change a step's status."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from acode.errors import AcodeError
from sessions_app.models import AgentSession, AuditEventType, StepStatus
from sessions_app.services.sessions import actor_name, lock_session, record_and_publish


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
    locked = lock_session(session.pk)
    locked.plan = _normalise_plan(steps)
    locked.save(update_fields=["plan", "updated_at"])
    record_and_publish(
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
    locked = lock_session(session.pk)
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
    record_and_publish(
        locked,
        "plan.updated",
        event_type=AuditEventType.PLAN_UPDATED,
        actor=actor_name(user, actor),
        target=f"plan step {number}",
        result=status,
        details={"step": number, "from": previous, "to": status},
    )
    return locked
