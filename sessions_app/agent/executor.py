"""The one place tools run. Every call is checked again here, whatever the model was shown.

``tool_check`` decides, from the role as the registry knows it now, whether a call may run:
the tool must be among the role's effective tools, the implementation's own permissions
must be held, the arguments must fit the tool's schema, paths must stay inside the
workspace and match the role's write globs, and commands must be plain argument lists
matching the role's command patterns. ``tool_execute`` runs what passed and audits every
call: ``RoleAction`` when it ran, ``ToolDenied`` (ACODE-ROL-003, with the reason) when not.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from roles.access import ToolSpec, command_allowed, path_allowed
from roles.registry import RoleDef, registry
from sessions_app.agent.redaction import redact_text
from sessions_app.agent.tools import TOOL_IMPLEMENTATIONS, ToolContext, ToolImpl
from sessions_app.agent.workspace import Refused, check_argv, command_line, resolve
from sessions_app.models import AgentSession, AuditEventType, Job
from sessions_app.services.audit import audit_record

logger = logging.getLogger(__name__)

DENIED = "ACODE-ROL-003"
BAD_ARGUMENTS = "ACODE-TOL-001"
TOOL_FAILED = "ACODE-TOL-002"


@dataclass(frozen=True)
class Decision:
    """Whether a call may run, and if not, the code and the reason in plain words."""

    allowed: bool
    code: str = ""
    reason: str = ""
    impl: ToolImpl | None = None
    target: str = ""


_VALIDATORS: dict[int, tuple[ToolSpec, Draft202012Validator]] = {}


def _validator(spec: ToolSpec) -> Draft202012Validator:
    """One compiled validator per tool spec; specs are immutable and replaced on reload."""
    cached = _VALIDATORS.get(id(spec))
    if cached is None or cached[0] is not spec:
        if len(_VALIDATORS) > 512:
            _VALIDATORS.clear()
        cached = (spec, Draft202012Validator(dict(spec.argument_schema)))
        _VALIDATORS[id(spec)] = cached
    return cached[1]


def _deny(reason: str, code: str = DENIED, target: str = "") -> Decision:
    return Decision(False, code, reason, None, target)


def tool_check(role: RoleDef, tool: str, arguments: Any, workspace: Path) -> Decision:
    """Decide a call without side effects (no database access: the registry is in memory)."""
    impl = TOOL_IMPLEMENTATIONS.get(tool)
    spec = registry.tool(tool)
    if impl is None or spec is None:
        return _deny(f"Tool {tool!r} does not exist.")
    if not role.access.allows(tool):
        withheld = role.access.withheld_reason(tool)
        why = withheld.reason if withheld else "not available"
        return _deny(f"Tool {tool!r} is not available in role {role.name}: {why}.")
    missing = impl.permissions - role.access.permissions
    if missing:
        return _deny(
            f"Tool {tool!r} needs permission {', '.join(sorted(missing))}, which role {role.name} lacks."
        )
    if not isinstance(arguments, dict):
        return _deny("Tool arguments must be a JSON object.", BAD_ARGUMENTS)
    try:
        errors = sorted(
            _validator(spec).iter_errors(arguments),
            key=lambda e: list(e.path),
        )
    except SchemaError as exc:
        return _deny(f"Tool {tool!r} has an invalid argument schema: {exc.message}", BAD_ARGUMENTS)
    if errors:
        where = "/".join(str(p) for p in errors[0].path) or "arguments"
        return _deny(f"Invalid arguments for {tool}: {where}: {errors[0].message}", BAD_ARGUMENTS)
    target = ""
    try:
        if "path" in arguments:
            checked = resolve(workspace, arguments["path"], for_write=impl.writes_path)
            target = checked.relative
            if impl.writes_path and not path_allowed(checked.relative, role.spec.write_paths):
                return _deny(
                    f"Role {role.name} may write only {', '.join(role.spec.write_paths)}; "
                    f"{checked.relative!r} is outside those paths.",
                    target=target,
                )
        if impl.runs_command:
            argv = check_argv(
                arguments.get("argv")
                or (["python", "-m", "pytest", "-q"] if tool == "run_tests" else None)
            )
            target = command_line(argv)
            if not command_allowed(target, role.spec.command_patterns):
                return _deny(
                    f"Role {role.name} may run only commands matching "
                    f"{', '.join(role.spec.command_patterns)}; {target!r} does not match.",
                    target=target,
                )
    except Refused as exc:
        return _deny(
            exc.reason, target=target or str(arguments.get("path") or arguments.get("argv") or "")
        )
    return Decision(True, impl=impl, target=target)


@dataclass(frozen=True)
class ToolOutcome:
    """What the model is told about its call, and how it ended."""

    status: str  # ok | denied | error
    output: str
    code: str = ""
    reason: str = ""
    target: str = ""

    def for_model(self) -> str:
        if self.status == "ok":
            return self.output
        return f"ERROR {self.code}: {self.reason}"


def _arguments_summary(arguments: Any) -> Any:
    text = json.dumps(arguments, default=str)
    if len(text) > 2000:
        text = text[:2000] + "…"
    return redact_text(text)


def tool_execute(
    *,
    session: AgentSession,
    role: RoleDef,
    tool: str,
    arguments: Any,
    actor: str,
    context: ToolContext,
    job: Job | None = None,
) -> ToolOutcome:
    """Check, then run, one tool call; audit it either way. Denied calls never execute."""
    decision = tool_check(role, tool, arguments, Path(session.workspace))
    details: dict[str, Any] = {"tool": tool, "arguments": _arguments_summary(arguments)}
    if job is not None:
        details["job"] = str(job.pk)
    if not decision.allowed or decision.impl is None:
        audit_record(
            event_type=AuditEventType.TOOL_DENIED,
            actor=actor,
            session=session,
            role=role.slug,
            target=f"{tool} {decision.target}".strip(),
            result=decision.code,
            details={**details, "reason": decision.reason, "code": decision.code},
        )
        return ToolOutcome("denied", "", decision.code, decision.reason, decision.target)
    try:
        result = decision.impl.run(context, arguments)
    except Refused as exc:
        audit_record(
            event_type=AuditEventType.TOOL_DENIED,
            actor=actor,
            session=session,
            role=role.slug,
            target=f"{tool} {decision.target}".strip(),
            result=DENIED,
            details={**details, "reason": exc.reason, "code": DENIED},
        )
        return ToolOutcome("denied", "", DENIED, exc.reason, decision.target)
    except OSError as exc:
        logger.warning("tool %s failed: %s", tool, exc)
        audit_record(
            event_type=AuditEventType.ROLE_ACTION,
            actor=actor,
            session=session,
            role=role.slug,
            target=f"{tool} {decision.target}".strip(),
            result="Error",
            details={**details, "error": str(exc)},
        )
        return ToolOutcome("error", "", TOOL_FAILED, f"{tool} failed: {exc}", decision.target)
    audit_record(
        event_type=AuditEventType.ROLE_ACTION,
        actor=actor,
        session=session,
        role=role.slug,
        target=result.target,
        result=result.summary,
        details={**details, "tool_name": tool, **result.details},
    )
    return ToolOutcome("ok", result.output, target=result.target)
