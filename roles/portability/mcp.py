"""MCP servers and roles' argument limits in the roles document (issue 24).

A server travels as its registration: secrets as the names of environment variables,
never their values. Approvals do not travel: an imported server's tools are listed on
the new installation and wait there, pending, until an admin there reads each description
and approves it. A hash in a file proves nothing about what that admin saw, and a file
is text anyone may edit, so importing it must not make a tool callable.

An argument limit travels with its role (role slug, tool name, JSON Schema fragment).
With ``replace``, servers and limits the document lacks are removed, but only when the
document has the section at all (older documents say nothing about MCP).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError

from acode.inputs import JSON_VALUE_REF, NO_NUL
from roles.decision.schemas import schema_problem
from roles.mcp.models import McpArgumentLimit, McpServer, McpTransport, shown_url
from roles.models import Role
from roles.services.mcp import (
    mcp_argument_limit_delete,
    mcp_argument_limit_save,
    mcp_server_delete,
    mcp_server_save,
)

SERVER_FIELDS = (
    "slug", "description", "transport", "command", "read_only_paths", "url", "env_secrets",
    "header_secrets", "network", "allow_private_network", "call_timeout_seconds",
    "max_output_chars", "enabled",
)  # fmt: skip
_STRINGS = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 4096}}
_NAMES = {
    "type": "object",
    "propertyNames": {"pattern": r"^[A-Za-z0-9_.-]{1,200}$"},
    "additionalProperties": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]{0,199}$"},
}
_COUNT = {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}
# The document's two MCP sections (roles.portability.document.DOCUMENT_SCHEMA).
MCP_PROPERTIES: dict[str, Any] = {
    "mcp_servers": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["slug"],
            "additionalProperties": False,
            "properties": {
                "slug": {"type": "string", "pattern": r"^[-a-zA-Z0-9_]+$", "maxLength": 40},
                "description": {"type": "string", "maxLength": 255},
                "transport": {"type": "string", "enum": list(McpTransport.values)},
                "command": _STRINGS,
                "read_only_paths": _STRINGS,
                "url": {"type": "string", "maxLength": 500},
                "env_secrets": _NAMES,
                "header_secrets": _NAMES,
                "network": {"type": "boolean"},
                "allow_private_network": {"type": "boolean"},
                "call_timeout_seconds": _COUNT,
                "max_output_chars": _COUNT,
                "enabled": {"type": "boolean"},
            },
        },
    },
    "argument_limits": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["role", "tool", "schema"],
            "additionalProperties": False,
            "properties": {
                "role": {"type": "string", "maxLength": 64},
                "tool": {"type": "string", "minLength": 1, "maxLength": 200},
                "schema": {
                    "type": "object",
                    "minProperties": 1,
                    "propertyNames": {"pattern": NO_NUL},
                    "additionalProperties": JSON_VALUE_REF,
                },
            },
        },
    },
}


def export_mcp() -> dict[str, Any]:
    """The MCP sections, only when there is something in them (so documents of
    installations without MCP stay as they were)."""
    out: dict[str, Any] = {}
    servers = [
        {f: shown_url(s.url) if f == "url" else getattr(s, f) for f in SERVER_FIELDS}
        for s in McpServer.objects.all()
    ]
    limits = [
        {"role": role, "tool": tool, "schema": schema}
        for role, tool, schema in McpArgumentLimit.objects.order_by(
            "role__slug", "tool"
        ).values_list("role__slug", "tool", "schema")
    ]
    if servers:
        out["mcp_servers"] = servers
    if limits:
        out["argument_limits"] = limits
    return out


def mcp_problems(data: Mapping[str, Any], known_roles: Collection[str]) -> list[str]:
    """What is wrong with a well-formed document's MCP sections; nothing is written."""
    problems: list[str] = []
    slugs = [s["slug"] for s in data.get("mcp_servers", [])]
    problems += [f"mcp_servers: {s!r} appears twice" for s in _twice(slugs)]
    for item in data.get("mcp_servers", []):
        try:
            McpServer(**item).full_clean(validate_unique=False, validate_constraints=False)
        except ValidationError as exc:
            for name, messages in exc.message_dict.items():
                problems += [f"mcp server {item['slug']}: {name}: {m}" for m in messages]
    limits = data.get("argument_limits", [])
    problems += [
        f"argument_limits: {pair!r} appears twice"
        for pair in _twice([f"{lim['role']} {lim['tool']}" for lim in limits])
    ]
    for lim in limits:
        if lim["role"] not in known_roles:
            problems.append(f"argument limit: unknown role {lim['role']!r}")
        try:
            McpArgumentLimit(tool=lim["tool"], schema=lim["schema"]).full_clean(
                exclude=["role"], validate_unique=False, validate_constraints=False
            )
        except ValidationError as exc:
            problems += [f"argument limit {lim['role']} {lim['tool']}: {m}" for m in exc.messages]
            continue
        problem = schema_problem(lim["schema"])
        if problem:
            problems.append(f"argument limit {lim['role']} {lim['tool']}: {problem}")
    return problems


def _twice(names: list[str]) -> list[str]:
    seen: set[str] = set()
    return [n for n in names if n in seen or seen.add(n)]  # type: ignore[func-returns-value]


def mcp_write(
    data: Mapping[str, Any],
    *,
    replace: bool,
    actor: str | None,
    user: AbstractBaseUser | None,
) -> tuple[int, int, list[str]]:
    """Write the MCP sections of a checked document (after its roles); returns the number
    of servers and limits written and what was removed."""
    removed: list[str] = []
    servers = {s.slug: s for s in McpServer.objects.all()}
    for item in data.get("mcp_servers", []):
        server = servers.pop(item["slug"], None) or McpServer(slug=item["slug"])
        defaults = McpServer(slug=item["slug"])
        for name in SERVER_FIELDS[1:]:
            setattr(server, name, item.get(name, getattr(defaults, name)))
        mcp_server_save(server=server, actor=actor, user=user)
    if replace and "mcp_servers" in data:
        for server in servers.values():
            removed.append(f"mcp server {server.slug}")
            mcp_server_delete(server=server, actor=actor, user=user)
    roles = {r.slug: r for r in Role.objects.all()}
    limits = {
        (lim.role.slug, lim.tool): lim for lim in McpArgumentLimit.objects.select_related("role")
    }
    for item in data.get("argument_limits", []):
        limit = limits.pop((item["role"], item["tool"]), None) or McpArgumentLimit(
            role=roles[item["role"]], tool=item["tool"]
        )
        limit.schema = item["schema"]
        mcp_argument_limit_save(limit=limit, actor=actor, user=user)
    if replace and "argument_limits" in data:
        for limit in limits.values():
            removed.append(f"argument limit {limit.role.slug} {limit.tool}")
            mcp_argument_limit_delete(limit=limit, actor=actor, user=user)
    return len(data.get("mcp_servers", [])), len(data.get("argument_limits", [])), removed
