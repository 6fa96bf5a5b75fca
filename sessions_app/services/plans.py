"""Writes to a session's plan: set it, change a step's status."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from acode.errors import AcodeError
from acode.inputs import has_forbidden_characters, trim_invisible
from sessions_app.models import AgentSession, AuditEventType, StepStatus
from sessions_app.permissions import SessionAction, action_check
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.sessions import actor_name, lock_session, record_and_publish

# Limits of a plan, whoever sets it (the API's serializers use the same numbers).
MAX_STEPS = 200
MAX_TITLE_CHARS = 300  # the agent cuts titles it reads from an answer to 300
MAX_DETAIL_CHARS = 20_000
MAX_FILES_PER_STEP = 100
MAX_PATH_CHARS = 1_000


def _invalid(number: int, problem: str) -> AcodeError:
    return AcodeError("ACODE-SES-004", f"Plan step {number} {problem}.", {"step": number})


def _text(number: int, step: dict[str, Any], key: str, limit: int) -> str:
    value = step.get(key, "")
    if not isinstance(value, str) or len(value) > limit or has_forbidden_characters(value):
        raise _invalid(number, f"needs {key} as text of at most {limit} characters")
    return trim_invisible(value)


def _list(number: int, step: dict[str, Any], key: str, kind: type, limit: int) -> list[Any]:
    value = step.get(key, [])
    if not isinstance(value, list) or len(value) > limit:
        raise _invalid(number, f"needs {key} as a list of at most {limit} items")
    if not all(isinstance(item, kind) and not isinstance(item, bool) for item in value):
        raise _invalid(number, f"needs {key} to hold only {kind.__name__} items")
    return list(value)


def _normalise_step(number: int, step: Any) -> dict[str, Any]:
    step = {"title": step} if isinstance(step, str) else step
    if not isinstance(step, dict):
        raise _invalid(number, "must be an object or a title")
    title = _text(number, step, "title", MAX_TITLE_CHARS)
    if not title:
        raise _invalid(number, "needs a non-blank title")
    status = step.get("status", StepStatus.PENDING)
    if status not in StepStatus.values:
        raise AcodeError(
            "ACODE-SES-004",
            f"Plan step {number} has unknown status {status!r}.",
            {"step": number, "allowed": list(StepStatus.values)},
        )
    files = _list(number, step, "files", str, MAX_FILES_PER_STEP)
    if any(len(path) > MAX_PATH_CHARS or has_forbidden_characters(path) for path in files):
        raise _invalid(number, f"needs file paths of at most {MAX_PATH_CHARS} characters")
    return {
        "number": number,
        "title": title,
        "detail": _text(number, step, "detail", MAX_DETAIL_CHARS),
        "files": files,
        "depends_on": _list(number, step, "depends_on", int, MAX_STEPS),
        "status": status,
    }


def _normalise_plan(steps: list[Any]) -> list[dict[str, Any]]:
    if len(steps) > MAX_STEPS:
        raise AcodeError(
            "ACODE-SES-004", f"A plan has at most {MAX_STEPS} steps.", {"steps": len(steps)}
        )
    return [_normalise_step(number, step) for number, step in enumerate(steps, start=1)]


@transaction.atomic
def plan_set(
    *,
    session: AgentSession,
    steps: list[Any],
    actor: str | None = None,
    user: User | None = None,
    run_id: uuid.UUID | None = None,
) -> AgentSession:
    """Set or replace the session plan (ordered steps; an empty list clears it).

    ``run_id``: the run executing in the session sets it (``permissions.action_refusal``)."""
    locked = lock_session(session.pk)
    action_check(SessionAction.PLAN_SET, session=locked, user=user, run_id=run_id)
    locked.plan = _normalise_plan(steps)
    locked.save(update_fields=["plan", "updated_at"])
    record_and_publish(
        locked,
        EventKind.PLAN_UPDATED,
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
    run_id: uuid.UUID | None = None,
) -> AgentSession:
    """Change one plan step's status (``run_id``: as in ``plan_set``)."""
    locked = lock_session(session.pk)
    action_check(SessionAction.PLAN_STEP, session=locked, user=user, run_id=run_id)
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
        raise AcodeError(  # an unknown object, as a step's URL names it
            "ACODE-API-404",
            f"The plan has no step {number}.",
            {"step": number, "steps": len(locked.plan)},
        )
    locked.save(update_fields=["plan", "updated_at"])
    record_and_publish(
        locked,
        EventKind.PLAN_UPDATED,
        event_type=AuditEventType.PLAN_UPDATED,
        actor=actor_name(user, actor),
        target=f"plan step {number}",
        result=status,
        details={"step": number, "from": previous, "to": status},
    )
    return locked
