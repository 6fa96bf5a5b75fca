"""A role document (what a role version records) as the decision reads it, and the calls a
diff checks its counterexamples with: ``decide`` under both versions, with a host whose
sandbox and layer can start and a workspace without links."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from roles.access import RoleAccess, RoleSpec
from roles.commands.workspace import KnownWorkspace
from roles.decision.core import decide
from roles.decision.diff_commands import any_allowed
from roles.decision.diff_paths import language_gain
from roles.decision.examples import RoleView
from roles.decision.facts import HostFacts
from roles.tools import ToolDeclaration

Counter = Mapping[str, Any]
# Fields a diff compares through what they grant (the rest are listed as changed).
ANALYSED = frozenset(
    {"effective_permissions", "effective_tools", "write_paths", "command_patterns",
     "argument_limits", "max_llm_calls", "max_tokens", "timeout_seconds",
     "answer_sets_plan", "protected", "mcp_servers", "entered_from"}
)  # fmt: skip
_HOST = HostFacts()
_WORKSPACE = KnownWorkspace()


@dataclass(frozen=True)
class CounterPair:
    """Two documents of a role, each as the decision reads it, and the declarations known."""

    old: Mapping[str, Any]
    new: Mapping[str, Any]
    old_role: RoleView
    new_role: RoleView
    known: Mapping[str, ToolDeclaration]


def document_role(document: Mapping[str, Any], known: Mapping[str, ToolDeclaration]) -> RoleView:
    """A role document as the decision reads it (its recorded effective access and limits;
    a tool whose declaration is not known is not granted)."""
    spec = RoleSpec(
        slug=str(document.get("slug") or ""), name=str(document.get("name") or document.get("slug") or ""),
        description="", colour="", permissions=tuple(document.get("permissions") or ()),
        allowed_tools=tuple(document.get("allowed_tools") or ()), capabilities=(), constraints=(),
        allowed_tool_groups=tuple(document.get("allowed_tool_groups") or ()),
        prompt_key="", context_strategy="", preferred_model="", fallback_model="", queue="",
        max_llm_calls=int(document.get("max_llm_calls") or 0), max_tokens=int(document.get("max_tokens") or 0),
        timeout_seconds=int(document.get("timeout_seconds") or 0), parent=document.get("parent"),
        write_paths=tuple(document.get("write_paths") or ()),
        command_patterns=tuple(document.get("command_patterns") or ()),
        answer_sets_plan=bool(document.get("answer_sets_plan")), protected=bool(document.get("protected")),
        custom=bool(document.get("custom")),
    )  # fmt: skip
    tools = tuple(document.get("effective_tools") or ())
    access = RoleAccess(
        frozenset(document.get("effective_permissions") or ()),
        tools,
        granted=tuple(known[t] for t in tools if t in known),
    )
    limits: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for item in document.get("argument_limits") or ():
        limits.setdefault(str(item.get("tool")), []).append(
            (str(item.get("role")), item.get("schema") or {})
        )
    return RoleView(spec, access, {tool: tuple(items) for tool, items in limits.items()})


def verified_call(
    pair: CounterPair, tool: str, arguments: dict[str, Any], *, facet: str = ""
) -> Counter | None:
    """The call as a counterexample when ``decide`` allows it under the new version and
    denies it under the old (``facet`` "network": allowed under both, with network access
    only under the new); None when it is not one."""
    try:
        before = decide(pair.old_role, tool, arguments, host=_HOST, workspace=_WORKSPACE)
        after = decide(pair.new_role, tool, arguments, host=_HOST, workspace=_WORKSPACE)
    except Exception:  # a call the decision cannot take is no counterexample
        return None
    example = {"kind": "call", "tool": tool, "arguments": arguments,
               "old_rule": before.rule, "new_rule": after.rule}  # fmt: skip
    if facet == "network":
        network = after.normalised.get("network") and not before.normalised.get("network")
        if before.allowed and after.allowed and network:
            return {**example, "old": "allow without network", "new": "allow with network"}
        return None
    if after.allowed and not before.allowed:
        return {**example, "old": "deny", "new": "allow"}
    return None


def arguments_for(pair: CounterPair, declaration: ToolDeclaration) -> dict[str, Any]:
    """Arguments the new version would accept for ``declaration``, as far as they can be
    built: an allowed command, a path inside its write globs, a value per required field."""
    arguments: dict[str, Any] = {}
    if declaration.command:
        arguments["argv"] = any_allowed(list(pair.new.get("command_patterns") or ())) or ["true"]
    if declaration.path:
        globs = list(pair.new.get("write_paths") or ()) if declaration.writes else []
        found = language_gain(globs, [])[1] if globs else None
        arguments["path"] = found or ("src" if declaration.path == "directory" else "probe.txt")
    schema = declaration.argument_schema
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in arguments:
            arguments[name] = _value(properties.get(name) or {})
    return arguments


def _value(schema: Mapping[str, Any]) -> Any:
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "integer" or kind == "number":
        return schema.get("minimum", 1)
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return "probe"
