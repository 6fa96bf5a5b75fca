"""The one place tools run. Every call is checked again here, whatever the model was shown.

``tool_check`` decides a call from the role definition alone (its effective tools carry
their declarations, ``roles.tools``), the arguments and the workspace: the tool must be
among the role's effective tools (which hold every permission it declares), the arguments
must fit its declared schema, paths must be workspace-relative and pass the role's write
policy (the write-path rule command layers are applied by too), commands must be argument
lists a command rule allows, and commands need a sandbox that can start. Each decision
names the rule that made it, and carries the arguments normalised once: what the
implementation runs with.

``tool_execute`` audits before anything runs and again after, whatever happens:

- refused: one ``ToolDenied`` row (``result`` the ACODE code, ``details.rule`` the rule);
- allowed: a ``ToolDecision`` row (``result`` "allowed", the rule, the role version, the
  normalised arguments), then the outcome: ``RoleAction`` (ran; ``result`` its summary, or
  ACODE-TOL-002 with the exception type when it failed) or ``ToolDenied`` (refused while
  running, e.g. a path that turned out to be a link). A command's writes the role may not
  make are discarded with its layer and audited as one more ``ToolDenied`` row (``phase``
  "command_writes").
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

from roles.commands import command_rule_check
from roles.registry import RoleDef
from roles.tools import ToolDeclaration
from sessions_app.agent.mcp_tool import run_mcp_tool
from sessions_app.agent.tools import TOOL_IMPLEMENTATIONS, ToolContext, ToolResult
from sessions_app.containment import (
    McpFailure,
    PatternTimeout,
    Refused,
    RuleRefused,
    SandboxUnavailable,
    check_argv,
    redact_text,
    sandbox_available,
    sandbox_required,
    split_path,
)
from sessions_app.models import AgentSession, AuditEventType, Job
from sessions_app.services.audit import audit_record, safe_text

logger = logging.getLogger(__name__)

DENIED = "ACODE-ROL-003"
BAD_ARGUMENTS = "ACODE-TOL-001"
TOOL_FAILED = "ACODE-TOL-002"
SANDBOX_UNAVAILABLE = "ACODE-TOL-003"
LAYER_UNAVAILABLE = "ACODE-TOL-004"
TOOL_DECISION = AuditEventType.TOOL_DECISION
NETWORK_PERMISSION = "network"
SECRETS_PERMISSION = "read_secrets"
MAX_AUDITED_WRITES = 100


@dataclass(frozen=True)
class Decision:
    """Whether a call may run: the rule that decided, the code and reason when not.

    ``arguments`` are the call's arguments as the check normalised them (what the
    implementation gets); ``normalised`` is what the audit records of them."""

    allowed: bool
    code: str = ""
    reason: str = ""
    declaration: ToolDeclaration | None = None
    target: str = ""
    rule: str = ""
    normalised: dict[str, Any] = field(default_factory=dict)
    arguments: dict[str, Any] = field(default_factory=dict)


_VALIDATORS: dict[ToolDeclaration, Draft202012Validator] = {}


def _validator(declaration: ToolDeclaration) -> Draft202012Validator:
    """One compiled validator per declaration (immutable, keyed by identity)."""
    validator = _VALIDATORS.get(declaration)
    if validator is None:
        if len(_VALIDATORS) > 512:  # declarations built from data (MCP) come and go
            _VALIDATORS.clear()
        validator = Draft202012Validator(dict(declaration.argument_schema))
        _VALIDATORS[declaration] = validator
    return validator


def _deny(
    reason: str,
    rule: str,
    code: str = DENIED,
    target: str = "",
    normalised: dict[str, Any] | None = None,
) -> Decision:
    return Decision(False, code, reason, None, target, rule, normalised or {})


def sandbox_problem(*, writable: bool = False) -> tuple[str, str, str]:
    """Why a command cannot run here, as (code, rule, reason); ("", "", "") when it can.

    Commands need the sandbox; write-capable ones also need its copy-on-write layer."""
    if not sandbox_required():
        return "", "", ""
    status = sandbox_available()
    if not status.available:
        reason = f"Commands run only inside a sandbox, and none can start here: {status.reason}."
        return SANDBOX_UNAVAILABLE, "sandbox", reason
    if writable and not status.overlay:
        reason = (
            "Commands that may write run only on a copy-on-write layer, and none can be "
            f"mounted here: {status.overlay_reason}."
        )
        return LAYER_UNAVAILABLE, "layer", reason
    return "", "", ""


def tool_check(role: RoleDef, tool: str, arguments: Any, workspace: Path) -> Decision:
    """Decide a call without side effects, from the role definition (no database access)."""
    declaration = role.access.declaration(tool)
    if declaration is None:
        withheld = role.access.withheld_reason(tool)
        if withheld is None:
            return _deny(f"Tool {tool!r} does not exist.", "tool_exists")
        return _deny(
            f"Tool {tool!r} is not available in role {role.name}: {withheld.reason}.",
            "effective_tools",
        )
    if not isinstance(arguments, dict):
        return _deny("Tool arguments must be a JSON object.", "schema", BAD_ARGUMENTS)
    try:
        errors = sorted(_validator(declaration).iter_errors(arguments), key=lambda e: list(e.path))
    except SchemaError as exc:
        return _deny(
            f"Tool {tool!r} has an invalid argument schema: {exc.message}", "schema", BAD_ARGUMENTS
        )
    if errors:
        where = "/".join(str(p) for p in errors[0].path) or "arguments"
        return _deny(
            f"Invalid arguments for {tool}: {where}: {errors[0].message}", "schema", BAD_ARGUMENTS
        )
    for owner, fragment in role.argument_limits.get(tool, ()):  # the role's, then ancestors'
        error = best_match(Draft202012Validator(dict(fragment)).iter_errors(arguments))
        if error is not None:
            where = "/".join(str(p) for p in error.path) or "arguments"
            reason = f"Role {owner} limits {tool}'s arguments: {where}: {error.message}"
            return _deny(reason, f"argument_limits[{owner}]: {tool}", target=where)
    if declaration.command:
        return _check_command(role, declaration, arguments, workspace)
    if declaration.path and "path" in arguments:
        return _check_path(role, declaration, arguments)
    rule = f"permission: {', '.join(declaration.required_permissions)}"
    return Decision(True, declaration=declaration, rule=rule, arguments=dict(arguments))


def normalised_path(raw: object, *, directory: bool = False) -> str:
    """The workspace-relative form of a model-given path, or ``Refused`` saying why."""
    return "/".join(split_path(raw, directory=directory)) or "."


def _check_path(role: RoleDef, declaration: ToolDeclaration, arguments: dict[str, Any]) -> Decision:
    raw = arguments["path"]
    try:
        rel = normalised_path(raw, directory=declaration.path == "directory")
    except Refused as exc:
        return _deny(exc.reason, "path", target=str(raw)[:1000])
    normalised = {"path": rel}
    rule = f"permission: {', '.join(declaration.required_permissions)}"
    if declaration.writes:  # the one write-path rule, as for a command's changes
        decision = role.write_policy.check(rel, change=declaration.writes)
        if not decision.allowed:
            return _deny(decision.reason, decision.rule, target=rel, normalised=normalised)
        rule = decision.rule
    return Decision(True, declaration=declaration, target=rel, rule=rule,
                    normalised=normalised, arguments={**arguments, "path": rel})  # fmt: skip


def _check_command(
    role: RoleDef, declaration: ToolDeclaration, arguments: dict[str, Any], workspace: Path
) -> Decision:
    raw = arguments.get("argv") or list(declaration.default_argv) or None
    try:
        argv = check_argv(raw)
    except RuleRefused as exc:
        return _deny(exc.reason, exc.rule, target=str(raw)[:1000])
    target = " ".join(argv)[:1000]
    normalised: dict[str, Any] = {
        "argv": argv,
        "writable": role.write_policy.may_write,
        "network": NETWORK_PERMISSION in role.access.permissions,
    }
    if "timeout_seconds" in arguments:
        normalised["timeout_seconds"] = arguments["timeout_seconds"]
    check = command_rule_check(argv, list(role.spec.command_patterns), workspace)
    if not check.allowed:
        return _deny(
            f"Role {role.name} may not run this command: {check.reason}.",
            check.rule,
            target=target,
            normalised=normalised,
        )
    code, rule, problem = sandbox_problem(writable=normalised["writable"])
    if problem:
        return _deny(problem, rule, code, target, normalised)
    normalised["sandbox"] = "on" if sandbox_required() else "off (ACODE_SANDBOX=off)"
    return Decision(True, declaration=declaration, target=target, rule=check.rule,
                    normalised=normalised, arguments={**arguments, "argv": argv})  # fmt: skip


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


def _clean(text: str) -> str:
    """Text safe for the model, the job events and the database: redacted, no NUL/surrogate."""
    return safe_text(redact_text(text))


@dataclass
class _CallAudit:
    """The audit rows of one call: every row carries the same call details."""

    session: AgentSession
    role: str
    actor: str
    target: str
    details: dict[str, Any]

    def row(self, event_type: str, result: str, *, target: str | None = None, **extra: Any) -> int:
        event = audit_record(
            event_type=event_type, actor=self.actor, session=self.session, role=self.role,
            target=self.target if target is None else target, result=result,
            details={**self.details, **extra},
        )  # fmt: skip
        return int(event.pk)


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
    """Check, audit the decision, run, audit the outcome. Denied calls never execute."""
    decision = _decide(role, tool, arguments, Path(session.workspace))
    details: dict[str, Any] = {
        "tool": tool,
        "arguments": _arguments_summary(arguments),
        "normalised": decision.normalised,
        "rule": decision.rule,
        "role_version": role.version,
        "role_hash": role.content_hash,
    }
    if job is not None:
        details["job"] = str(job.pk)
    declared = role.access.declaration(tool)
    if declared is not None and declared.kind == "mcp":  # which approved definition decided
        details["definition_hash"] = declared.pinned_hash
    audit = _CallAudit(session, role.slug, actor, f"{tool} {decision.target}".strip(), details)
    if not decision.allowed or decision.declaration is None:
        audit.row(AuditEventType.TOOL_DENIED, decision.code, phase="decision",
                  reason=decision.reason, code=decision.code)  # fmt: skip
        return ToolOutcome(
            "denied", "", decision.code, _clean(decision.reason), _clean(decision.target)
        )
    details["decision"] = audit.row(TOOL_DECISION, "allowed", phase="decision")
    details["decision_rule"] = details.pop("rule")
    return _run(audit, decision, _call_context(context, role))


def _decide(role: RoleDef, tool: str, arguments: Any, workspace: Path) -> Decision:
    """``tool_check``; a check that cannot decide refuses, and says so."""
    try:
        return tool_check(role, tool, arguments, workspace)
    except Exception as exc:
        logger.exception("checking tool %s failed", tool)
        reason = f"The call could not be checked ({type(exc).__name__}: {exc}); it did not run."
        return _deny(reason, "check_failed", TOOL_FAILED)


def _call_context(context: ToolContext, role: RoleDef) -> ToolContext:
    """The session's context with the role's powers, from the role as it is now."""
    return dataclasses.replace(
        context,
        may_write=role.write_policy.may_write,
        network=NETWORK_PERMISSION in role.access.permissions,
        read_secrets=SECRETS_PERMISSION in role.access.permissions,
        write_policy=role.write_policy,
    )


def _run(audit: _CallAudit, decision: Decision, context: ToolContext) -> ToolOutcome:
    """Run an allowed call with its normalised arguments; audit how it ended."""
    assert decision.declaration is not None
    tool = decision.declaration.name
    try:
        if decision.declaration.kind == "mcp":
            result = run_mcp_tool(context, decision.declaration, decision.arguments)
        else:
            result = TOOL_IMPLEMENTATIONS[tool].run(context, decision.arguments)
    except McpFailure as exc:  # a server down, slow, unapproved or failing: a clean error
        error = _clean(exc.message)[:2000]
        audit.row(AuditEventType.ROLE_ACTION, exc.code, phase="outcome", status="error",
                  error=error)  # fmt: skip
        return ToolOutcome("error", "", exc.code, error, audit.target)
    except SandboxUnavailable as exc:
        code, rule, reason = sandbox_problem(writable=context.may_write)
        reason = reason or f"Commands run only inside a sandbox, and none can start here: {exc}."
        return _refused_while_running(audit, decision, code or SANDBOX_UNAVAILABLE,
                                      rule or "sandbox", reason)  # fmt: skip
    except Refused as exc:
        return _refused_while_running(audit, decision, DENIED, _refusal_rule(exc), exc.reason)
    except Exception as exc:  # every failure is an audited, clean tool error
        logger.exception("tool %s failed", tool)
        error = _clean(f"{type(exc).__name__}: {exc}")[:2000]
        audit.row(AuditEventType.ROLE_ACTION, TOOL_FAILED, phase="outcome", status="error",
                  error_type=type(exc).__name__, error=error)  # fmt: skip
        return ToolOutcome("error", "", TOOL_FAILED, f"{tool} failed: {error}", audit.target)
    _audit_write_denials(audit, result)
    audit.row(AuditEventType.ROLE_ACTION, result.summary, target=result.target, phase="outcome",
              status="ok", tool_name=tool, **result.details)  # fmt: skip
    return ToolOutcome("ok", _clean(result.output), target=_clean(result.target))


def _refusal_rule(exc: Refused) -> str:
    if isinstance(exc, RuleRefused):
        return exc.rule
    if isinstance(exc, PatternTimeout):
        return "regex_timeout"
    return "path"


def _refused_while_running(
    audit: _CallAudit, decision: Decision, code: str, rule: str, reason: str
) -> ToolOutcome:
    audit.row(AuditEventType.TOOL_DENIED, code, phase="outcome", status="denied", rule=rule,
              reason=_clean(reason), code=code)  # fmt: skip
    return ToolOutcome("denied", "", code, _clean(reason), _clean(decision.target))


def _audit_write_denials(audit: _CallAudit, result: ToolResult) -> None:
    """One ``ToolDenied`` row for everything a command changed that the role may not."""
    denied = result.write_denials
    if not denied:
        return
    rules = sorted({d["rule"] for d in denied})
    audit.row(
        AuditEventType.TOOL_DENIED, DENIED, phase="command_writes", rule=rules[0], rules=rules,
        count=len(denied), discarded=denied[:MAX_AUDITED_WRITES],
        reason=f"{len(denied)} change(s) the role may not make were discarded",
    )  # fmt: skip
