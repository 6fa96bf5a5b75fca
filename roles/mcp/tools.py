"""MCP tools as the one tool registry sees them: a declaration per approved definition,
and the argument limits roles set.

Naming: ``mcp__<server>__<tool>`` (``mcp_tool_name``). Tool names reach the model as
OpenAI-style function names, which allow only letters, digits, ``_`` and ``-`` (a dot is
refused by OpenAI's API, so it becomes ``_``); ``__`` is what Claude Code's users know, and
the name stays a valid slug, so a ``Tool`` row (enable, describe, order) and a role's
allow-list name MCP tools exactly as built-in ones. What is called is never read back out
of the name: a declaration carries its server and tool (``ToolDeclaration.mcp_server``).

Permissions: a tool of server S requires the permission ``mcp-S`` (per server); a role's
allow-list narrows it to single tools (per tool); a child never exceeds its parent
(``roles.access.compute_access``, as for every tool).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from roles.access import ToolSpec
from roles.mcp.models import McpArgumentLimit, McpToolDefinition, McpToolState
from roles.tools import ToolDeclaration

PREFIX = "mcp__"
SEPARATOR = "__"
TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_STATE_REASON = {
    McpToolState.PENDING: "MCP definition not approved yet",
    McpToolState.CHANGED: "MCP definition changed since it was approved",
    McpToolState.MISSING: "MCP server no longer lists it",
}


def mcp_tool_name(server: str, tool: str) -> str:
    """The registry name of ``tool`` of ``server``: ``mcp__<server>__<tool>`` with a dot in
    the tool's name as ``_`` (function names a model is offered allow no dot). A server's
    slug has no ``__`` and no ``_`` at either end, so no two servers' names meet; two tools
    of one server whose names meet this way are refused when it lists them."""
    return f"{PREFIX}{server}{SEPARATOR}{tool.replace('.', '_')}"


def mcp_tool_registered(name: str) -> bool:
    """Whether ``name`` is a tool some registered server has listed."""
    if not name.startswith(PREFIX):
        return False
    server = name[len(PREFIX) :].partition(SEPARATOR)[0]
    return any(
        mcp_tool_name(server, tool) == name
        for tool in McpToolDefinition.objects.filter(server__slug=server).values_list(
            "name", flat=True
        )
    )


def listing_refusals(server: str, names: list[str]) -> dict[str, str]:
    """The tools of a listing that cannot be offered, with why: a name outside MCP's rules
    (1 to 128 letters, digits, ``_ - .``), or one whose registry name another tool of the
    listing also has."""
    refused: dict[str, str] = {}
    seen: dict[str, str] = {}
    for name in names:
        if not TOOL_NAME.fullmatch(name):
            refused[name] = "its name breaks MCP's rules (1-128 letters, digits, _ - .)"
            continue
        registry = mcp_tool_name(server, name)
        if registry in seen:
            other = seen[registry]
            refused[name] = refused[other] = f"{name!r} and {other!r} are both named {registry}"
        else:
            seen[registry] = name
    return refused


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
