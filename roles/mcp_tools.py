"""MCP tools as the one tool registry sees them: a declaration per approved definition,
and the argument limits roles set.

Naming: ``mcp__<server>__<tool>``. The issue suggests ``mcp.<server>.<tool>``, but tool
names reach the model as OpenAI-style function names, which allow only letters, digits,
``_`` and ``-`` (a dot is refused by OpenAI's API); ``__`` is what Claude Code's users know,
and the name stays a valid slug, so a ``Tool`` row (enable, describe, order) and a role's
allow-list name MCP tools exactly as built-in ones. Server slugs never contain ``__``, so
the name splits back unambiguously.

Permissions: a tool of server S requires the permission ``mcp-S`` (per server); a role's
allow-list narrows it to single tools (per tool); a child never exceeds its parent
(``roles.access.compute_access``, as for every tool).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from roles.access import ToolSpec
from roles.mcp_models import McpArgumentLimit, McpToolDefinition, McpToolState
from roles.tools import ToolDeclaration

PREFIX = "mcp__"
SEPARATOR = "__"
_STATE_REASON = {
    McpToolState.PENDING: "MCP definition not approved yet",
    McpToolState.CHANGED: "MCP definition changed since it was approved",
    McpToolState.MISSING: "MCP server no longer lists it",
}


def mcp_tool_name(server: str, tool: str) -> str:
    """The registry name of ``tool`` of ``server``."""
    return f"{PREFIX}{server}{SEPARATOR}{tool}"


def split_mcp_tool_name(name: str) -> tuple[str, str] | None:
    """(server, tool) of a registry name, or None for a name that is not an MCP tool's."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name[len(PREFIX) :].partition(SEPARATOR)
    return (server, tool) if sep and server and tool else None


def mcp_tool_registered(name: str) -> bool:
    """Whether ``name`` is a tool some registered server has listed."""
    parts = split_mcp_tool_name(name)
    return parts is not None and (
        McpToolDefinition.objects.filter(server__slug=parts[0], name=parts[1]).exists()
    )


def server_permission(server: str) -> str:
    """The permission that grants a server's tools."""
    return f"mcp-{server}"


def mcp_declarations(using: str = "default") -> list[tuple[ToolDeclaration, str]]:
    """A declaration per listed tool of each enabled server, with why it is withheld
    ("" when its approved definition is what the server lists now)."""
    out: list[tuple[ToolDeclaration, str]] = []
    for row in (
        McpToolDefinition.objects.using(using).select_related("server").filter(server__enabled=True)
    ):
        pinned = row.approved_definition if row.offered else row.live_definition
        out.append((_declaration(row, pinned or {}), "" if row.offered else _reason(row)))
    return out


def _reason(row: McpToolDefinition) -> str:
    return _STATE_REASON.get(McpToolState(row.state), "MCP definition not approved")


def _declaration(row: McpToolDefinition, definition: Mapping[str, Any]) -> ToolDeclaration:
    schema = definition.get("input_schema") or {"type": "object"}
    return ToolDeclaration(
        mcp_tool_name(row.server.slug, row.name),
        str(definition.get("description", ""))[:1000],
        MappingProxyType(dict(schema)),
        frozenset({server_permission(row.server.slug)}),
        kind="mcp",
        pinned_hash=row.approved_hash if row.offered else row.live_hash,
        mcp_server=row.server.slug,
        mcp_tool=row.name,
    )


def argument_limits(using: str = "default") -> dict[str, dict[str, Mapping[str, Any]]]:
    """Each role's argument limits: role slug -> tool name -> JSON Schema fragment."""
    limits: dict[str, dict[str, Mapping[str, Any]]] = {}
    for slug, tool, schema in McpArgumentLimit.objects.using(using).values_list(
        "role__slug", "tool", "schema"
    ):
        limits.setdefault(slug, {})[tool] = MappingProxyType(dict(schema))
    return limits


def mcp_tool_specs(
    rows: Mapping[str, tuple[str, bool, int]], using: str = "default"
) -> list[ToolSpec]:
    """The registry's specs of MCP tools. Approval is the admin's act that enables one; its
    ``Tool`` row (``rows``: name -> description, enabled, position), when there is one,
    may still turn it off, describe or order it."""
    specs = []
    for declaration, withheld in mcp_declarations(using):
        description, enabled, position = rows.get(declaration.name, ("", True, 0))
        description = description or declaration.description
        specs.append(
            ToolSpec(declaration, description, enabled and not withheld, position, withheld)
        )
    return specs
