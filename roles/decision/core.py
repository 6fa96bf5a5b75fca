"""The tool decision: may this role make this call, and which rule decided.

One pure function, ``decide``: its inputs are the role's definition (its effective tools
carry their declarations, ``roles.tools``), the call (tool and arguments), the host's
sandbox (``roles.decision.facts``) and the workspace's links (``roles.commands.workspace``).
It reads no database, file or clock, so the executor (before every call), a role's
examples (on every save) and a replay of recorded calls get the same answer from the same
inputs.

The rules, in order: the tool must be among the role's effective tools (which hold every
permission it declares); the arguments must fit its declared schema; paths must be
workspace-relative and pass the role's write policy (the write-path rule command layers are
applied by too); commands must be argument lists a command rule allows, and need a sandbox
(and, when the role may write, a copy-on-write layer) that can start; a command rule may
say a person consents first (the decision is then "ask"). Each decision names
the rule that made it and carries the arguments normalised once: what the implementation
runs with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from jsonschema.exceptions import best_match

from roles.access import RoleAccess, RoleSpec
from roles.commands import command_rule_check
from roles.commands.workspace import WorkspaceFacts
from roles.decision.arguments import Refused, RuleRefused, check_argv, normalised_path
from roles.decision.denial import Route, role_denial
from roles.decision.facts import HostSource, host_facts, sandbox_problem
from roles.decision.schemas import argument_validator, limit_validator, non_finite, workspace_links
from roles.tools import ToolDeclaration
from roles.writes import WritePolicy

DENIED = "ACODE-ROL-003"
BAD_ARGUMENTS = "ACODE-TOL-001"
CONSENT_NEEDED = "ACODE-TOL-006"
NETWORK_PERMISSION = "network"


class PolicyRole(Protocol):
    """A role as the decision reads it (``roles.registry.RoleDef`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def spec(self) -> RoleSpec: ...

    @property
    def access(self) -> RoleAccess: ...

    @property
    def write_policy(self) -> WritePolicy: ...

    @property
    def argument_limits(self) -> Mapping[str, tuple[tuple[str, Mapping[str, Any]], ...]]:
        """Per tool, the JSON Schema fragments narrowing its arguments (the role's own,
        then its ancestors'), each with the role that set it."""
        ...

    @property
    def tool_routes(self) -> Mapping[str, Route]:
        """Per tool the role lacks, the nearest role with it that transitions reach."""
        ...


@dataclass(frozen=True)
class Decision:
    """Whether a call may run: the rule that decided, the code and reason when not.

    ``arguments`` are the call's arguments as the check normalised them (what the
    implementation gets); ``normalised`` is what the audit records of them. ``ask``: the
    call may run once a person consents (a rule's ``"outcome": "ask"``); such a decision
    is not ``allowed`` (whoever reads only that refuses it), carries the declaration and
    arguments the call would run with, and the code ACODE-TOL-006."""

    allowed: bool
    code: str = ""
    reason: str = ""
    declaration: ToolDeclaration | None = None
    target: str = ""
    rule: str = ""
    normalised: dict[str, Any] = field(default_factory=dict)
    arguments: dict[str, Any] = field(default_factory=dict)
    ask: bool = False
    suggestion: str = ""

    @property
    def outcome(self) -> str:
        """allow | ask | deny"""
        return "allow" if self.allowed else "ask" if self.ask else "deny"


_VALIDATORS: dict[ToolDeclaration, Any] = {}


def _validator(declaration: ToolDeclaration) -> Any:
    """One compiled validator per declaration (immutable, keyed by identity): RE2 patterns,
    references only inside the schema (``roles.decision.schemas``)."""
    validator = _VALIDATORS.get(declaration)
    if validator is None:
        if len(_VALIDATORS) > 512:  # declarations built from data (MCP) come and go
            _VALIDATORS.clear()
        validator = argument_validator(declaration.argument_schema)
        _VALIDATORS[declaration] = validator
    return validator


def deny(
    reason: str,
    rule: str,
    code: str = DENIED,
    target: str = "",
    normalised: dict[str, Any] | None = None,
) -> Decision:
    """A refusal by ``rule``."""
    return Decision(False, code, reason, None, target, rule, normalised or {})


def decide(
    role: PolicyRole, tool: str, arguments: Any, *, host: HostSource, workspace: WorkspaceFacts
) -> Decision:
    """Decide a call, without side effects, from its inputs alone."""
    declaration = role.access.declaration(tool)
    if declaration is None:
        withheld = role.access.withheld_reason(tool)
        if withheld is None:
            return deny(f"Tool {tool!r} does not exist.", "tool_exists")
        text, suggestion = role_denial(role.name, tool, withheld, role.tool_routes.get(tool))
        return Decision(False, DENIED, text, rule="effective_tools", suggestion=suggestion)
    if not isinstance(arguments, dict):
        return deny("Tool arguments must be a JSON object.", "schema", BAD_ARGUMENTS)
    odd = non_finite(arguments)
    if odd:
        reason = f"Invalid arguments for {tool}: {odd}: NaN and Infinity are not JSON numbers"
        return deny(reason, "schema", BAD_ARGUMENTS)
    try:
        errors = sorted(_validator(declaration).iter_errors(arguments), key=lambda e: list(e.path))
    except Exception as exc:  # a reference that does not resolve here, a bad schema
        problem = getattr(exc, "message", None) or str(exc)
        return deny(
            f"Tool {tool!r} has an invalid argument schema: {problem}", "schema", BAD_ARGUMENTS
        )
    if errors:
        where = "/".join(str(p) for p in errors[0].path) or "arguments"
        return deny(
            f"Invalid arguments for {tool}: {where}: {errors[0].message}", "schema", BAD_ARGUMENTS
        )
    refusal = _limits_check(role, tool, arguments, workspace)
    if refusal is not None:
        return refusal
    if declaration.command:
        return _check_command(role, declaration, arguments, host, workspace)
    if declaration.path and "path" in arguments:
        return _check_path(role, declaration, arguments)
    rule = f"permission: {', '.join(declaration.required_permissions)}"
    return Decision(True, declaration=declaration, rule=rule, arguments=dict(arguments))


def _limits_check(
    role: PolicyRole, tool: str, arguments: dict[str, Any], workspace: WorkspaceFacts
) -> Decision | None:
    """The role's (and its ancestors') argument limits, paths judged in ``workspace``."""
    token = workspace_links.set(workspace)
    try:
        for owner, fragment in role.argument_limits.get(tool, ()):
            try:
                error = best_match(limit_validator(fragment).iter_errors(arguments))
            except Exception as exc:  # a limit that cannot run refuses the call
                problem = getattr(exc, "message", None) or str(exc)
                error_reason = f"Role {owner}'s limit on {tool} cannot be checked: {problem}"
                return deny(error_reason, f"argument_limits[{owner}]: {tool}")
            if error is not None:
                where = "/".join(str(p) for p in error.path) or "arguments"
                reason = f"Role {owner} limits {tool}'s arguments: {where}: {error.message}"
                return deny(reason, f"argument_limits[{owner}]: {tool}", target=where)
    finally:
        workspace_links.reset(token)
    return None


def _check_path(
    role: PolicyRole, declaration: ToolDeclaration, arguments: dict[str, Any]
) -> Decision:
    raw = arguments["path"]
    try:
        rel = normalised_path(raw, directory=declaration.path == "directory")
    except Refused as exc:
        return deny(exc.reason, "path", target=str(raw)[:1000])
    normalised = {"path": rel}
    rule = f"permission: {', '.join(declaration.required_permissions)}"
    if declaration.writes:  # the one write-path rule, as for a command's changes
        decision = role.write_policy.check(rel, change=declaration.writes)
        if not decision.allowed:
            return deny(decision.reason, decision.rule, decision.code or DENIED, rel, normalised)
        rule = decision.rule
    return Decision(True, declaration=declaration, target=rel, rule=rule,
                    normalised=normalised, arguments={**arguments, "path": rel})  # fmt: skip


def _check_command(
    role: PolicyRole,
    declaration: ToolDeclaration,
    arguments: dict[str, Any],
    host: HostSource,
    workspace: WorkspaceFacts,
) -> Decision:
    raw = arguments.get("argv") or list(declaration.default_argv) or None
    try:
        argv = check_argv(raw)
    except RuleRefused as exc:
        return deny(exc.reason, exc.rule, target=str(raw)[:1000])
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
        return deny(
            f"Role {role.name} may not run this command: {check.reason}.",
            check.rule,
            target=target,
            normalised=normalised,
        )
    facts = host_facts(host)  # the one read: only a command depends on the host
    code, rule, problem = sandbox_problem(facts, writable=normalised["writable"])
    if problem:
        return deny(problem, rule, code, target, normalised)
    normalised["sandbox"] = "on" if facts.sandbox_required else "off (ACODE_SANDBOX=off)"
    if check.ask:
        reason = f"Role {role.name} runs this command only once a person consents ({check.rule})."
        return Decision(False, CONSENT_NEEDED, reason, declaration, target, check.rule,
                        normalised, {**arguments, "argv": argv}, ask=True)  # fmt: skip
    return Decision(True, declaration=declaration, target=target, rule=check.rule,
                    normalised=normalised, arguments={**arguments, "argv": argv})  # fmt: skip
