"""Writes to a session's plan: set it, change a step's status."""

from __future__ import annotations

import functools
import json
import uuid
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from acode.errors import AcodeError
from acode.inputs import json_schema_errors, trim_invisible
from acode.text import blank_text_pattern
from sessions_app.models import AgentSession, AuditEventType, StepStatus
from sessions_app.permissions import SessionAction, action_check
from sessions_app.services.audit import actor_name, session_record
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.locks import lock_session

# Limits of a plan, whoever sets it (the API's serializers use the same numbers).
MAX_STEPS = 200
MAX_TITLE_CHARS = 300  # the agent cuts titles it reads from an answer to 300
MAX_DETAIL_CHARS = 20_000
MAX_FILES_PER_STEP = 100
MAX_PATH_CHARS = 1_000
MAX_CRITERIA = 20  # a step's acceptance criteria, and a plan's risks
MAX_CRITERION_CHARS = 1_000
COMPLEXITIES = ("low", "medium", "high")


# Text with no NUL and no unpaired surrogate (``acode.text.has_forbidden_characters``).
_TEXT = r"^[^\u0000\ud800-\udfff]*$"


@functools.cache
def _step_schema() -> dict[str, Any]:
    """One plan step (a bare title is read as ``{"title": ...}`` first), as JSON Schema.
    Each property's description says what it must be, in the refusal's words."""
    visible = {"not": {"pattern": blank_text_pattern()}}
    files = {"type": "string", "maxLength": MAX_PATH_CHARS, "pattern": _TEXT}
    return {
        "type": "object",
        "required": ["title"],
        "properties": {
            "title": {
                "type": "string",
                "maxLength": MAX_TITLE_CHARS,
                "pattern": _TEXT,
                **visible,
                "description": f"non-blank text of at most {MAX_TITLE_CHARS} characters",
            },
            "detail": {
                "type": "string",
                "maxLength": MAX_DETAIL_CHARS,
                "pattern": _TEXT,
                "description": f"text of at most {MAX_DETAIL_CHARS} characters",
            },
            "files": {
                "type": "array",
                "maxItems": MAX_FILES_PER_STEP,
                "items": files,
                "description": f"a list of at most {MAX_FILES_PER_STEP} file paths of at "
                f"most {MAX_PATH_CHARS} characters",
            },
            "acceptance": {
                "type": "array",
                "maxItems": MAX_CRITERIA,
                "items": {"type": "string", "maxLength": MAX_CRITERION_CHARS, "pattern": _TEXT},
                "description": f"a list of at most {MAX_CRITERIA} acceptance criteria of at "
                f"most {MAX_CRITERION_CHARS} characters",
            },
            "depends_on": {
                "type": "array",
                "maxItems": MAX_STEPS,
                "items": {"type": "integer"},
                "description": f"a list of at most {MAX_STEPS} step numbers",
            },
            "status": {
                "enum": list(StepStatus.values),
                "description": f"one of {', '.join(StepStatus.values)}",
            },
        },
    }


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _step_refusal(number: int, step: Any) -> AcodeError | None:
    """Why ``step`` (plan step ``number``) is not a step, naming the field and what it
    must be (ACODE-SES-004), or None."""
    errors = json_schema_errors(_step_schema(), step)
    if not errors:
        return None
    error = errors[0]
    details: dict[str, Any] = {"step": number}
    if not error.absolute_path and error.validator == "type":
        return AcodeError(
            "ACODE-SES-004", f"Plan step {number} must be an object or a title.", details
        )
    field = str(error.absolute_path[0]) if error.absolute_path else "title"
    expected = _step_schema()["properties"][field]
    details["field"] = field
    if field == "status":
        details["allowed"] = list(StepStatus.values)
    if len(error.absolute_path) > 1:
        details["location"] = "/".join(str(part) for part in error.absolute_path)
    got = f" (got {_shown(error.instance)})" if field in step else ""
    message = f"Plan step {number} needs {field} as {expected['description']}{got}."
    return AcodeError("ACODE-SES-004", message, details)


def _normalise_step(number: int, step: Any) -> dict[str, Any]:
    step = {"title": step} if isinstance(step, str) else step
    if refusal := _step_refusal(number, step):
        raise refusal
    normal = {
        "number": number,
        "title": trim_invisible(step["title"]),
        "detail": trim_invisible(step.get("detail", "")),
        "files": list(step.get("files", [])),
        "depends_on": [int(n) for n in step.get("depends_on", [])],
        "status": step.get("status", StepStatus.PENDING),
    }
    criteria = [trim_invisible(c) for c in step.get("acceptance", []) if trim_invisible(c)]
    if criteria:  # only when there are some: a step without keeps its shape
        normal["acceptance"] = criteria
    return normal


def plan_notes(answer: str) -> dict[str, Any]:
    """What a Planner's answer says of the whole plan besides its steps: its complexity
    (low, medium or high) and its risks, when the answer is a JSON plan that has them."""
    start, end = answer.find("{"), answer.rfind("}")
    try:
        data = json.loads(answer[start : end + 1]) if 0 <= start < end else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return {}
    notes: dict[str, Any] = {}
    complexity = str(data.get("complexity", "")).strip().lower()
    if complexity in COMPLEXITIES:
        notes["complexity"] = complexity
    risks = data.get("risks")
    if isinstance(risks, list):
        kept = [trim_invisible(str(r))[:MAX_CRITERION_CHARS] for r in risks if str(r).strip()]
        notes["risks"] = kept[:MAX_CRITERIA]
    return notes


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
    with lock_session(session.pk) as locked:
        action_check(SessionAction.PLAN_SET, session=locked, user=user, run_id=run_id)
        locked.plan = _normalise_plan(steps)
        _plan_saved(
            locked,
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
    with lock_session(session.pk) as locked:
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
        _plan_saved(
            locked,
            actor=actor_name(user, actor),
            target=f"plan step {number}",
            result=status,
            details={"step": number, "from": previous, "to": status},
        )
        return locked


def _plan_saved(
    locked: AgentSession, *, actor: str, target: str, result: str, details: dict[str, Any]
) -> None:
    """Save the locked session's changed plan: its audit row, then its live event."""
    locked.save(update_fields=["plan", "updated_at"])
    session_record(
        locked,
        EventKind.PLAN_UPDATED,
        event_type=AuditEventType.PLAN_UPDATED,
        actor=actor,
        target=target,
        result=result,
        details=details,
    )
