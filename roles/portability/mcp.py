"""MCP servers and argument limits in the roles document (``mcp_servers``,
``argument_limits``): their form, their checks, export and import.

A server travels as its registration: secrets by the names of environment variables,
never their values. Approvals do not travel: a tool's description reaches the model, so
an admin of each installation lists what its servers say there and approves it
(``POST /api/mcp-servers/<slug>/refresh/``, then ``.../approve/``). An import creates or
updates registrations and limits; pinned definitions already on this installation stay as
they are (a server whose registration changed is held to the same hashes at its next
listing).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from roles.mcp_models import McpArgumentLimit, McpServer, McpTransport
from roles.mcp_tools import server_permission, split_mcp_tool_name
from roles.models import Role
from roles.services.mcp import (
    mcp_argument_limit_delete,
    mcp_argument_limit_save,
    mcp_server_delete,
    mcp_server_save,
)
from roles.tools import declared_tools

_NAMES = {
    "type": "object",
    "maxProperties": 100,
    "propertyNames": {"minLength": 1, "maxLength": 128},
    "additionalProperties": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"},
}
_PATHS = {
    "type": "array",
    "maxItems": 256,
    "items": {"type": "string", "pattern": "^/", "maxLength": 4096},
}
_COUNT = {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}
# What a registration holds; every field but the slug may be left out (its default).
SERVER_FIELDS: dict[str, Any] = {
    "slug": {"type": "string", "pattern": r"^(?!.*__)[-a-zA-Z0-9_]{1,40}$", "maxLength": 40},
    "description": {"type": "string", "maxLength": 255},
    "transport": {"type": "string", "enum": list(McpTransport.values)},
    "command": {
        "type": "array",
        "maxItems": 256,
        "items": {"type": "string", "minLength": 1, "maxLength": 4096},
    },
    "read_only_paths": _PATHS,
    "url": {"type": "string", "maxLength": 500},
    "env_secrets": _NAMES,
    "header_secrets": _NAMES,
    "network": {"type": "boolean"},
    "call_timeout_seconds": _COUNT,
    "max_output_chars": _COUNT,
    "enabled": {"type": "boolean"},
}


def _variant(transport: str, required: list[str], **fields: Any) -> dict[str, Any]:
    properties = {**SERVER_FIELDS, "transport": {"type": "string", "enum": [transport]}}
    properties["env_secrets"] = properties["header_secrets"] = {
        k: v for k, v in _NAMES.items() if k != "propertyNames"
    }
    return {
        "type": "object",
        "required": ["slug", *required],
        "properties": {**properties, **fields},
        "additionalProperties": False,
    }


# A new registration, as POST /api/mcp-servers/ publishes and checks it: a stdio server
# (the default transport) needs its command, an HTTP server its URL.
SERVER_CREATE_SCHEMA: dict[str, Any] = {
    "oneOf": [
        _variant("stdio", ["command"], command={**SERVER_FIELDS["command"], "minItems": 1}),
        _variant(
            "http", ["transport", "url"], url={"type": "string", "minLength": 1, "maxLength": 500}
        ),
    ]
}
SECTIONS_SCHEMA: dict[str, Any] = {
    "mcp_servers": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["slug"],
            "properties": SERVER_FIELDS,
            "additionalProperties": False,
        },
    },
    "argument_limits": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["role", "tool", "schema"],
            "properties": {
                "role": {"type": "string", "maxLength": 64},
                "tool": {"type": "string", "minLength": 1, "maxLength": 200},
                "schema": {"type": "object", "minProperties": 1},
            },
            "additionalProperties": False,
        },
    },
}


# -- export ---------------------------------------------------------------------------
def export_mcp() -> dict[str, Any]:
    """Registrations (secret names only) and argument limits, in a stable order."""
    return {
        "mcp_servers": [
            {name: getattr(server, name) for name in SERVER_FIELDS}
            for server in McpServer.objects.order_by("slug")
        ],
        "argument_limits": [
            {"role": role, "tool": tool, "schema": schema}
            for role, tool, schema in McpArgumentLimit.objects.order_by(
                "role__slug", "tool"
            ).values_list("role__slug", "tool", "schema")
        ],
    }


# -- checking -------------------------------------------------------------------------
def mcp_server_slugs(data: Mapping[str, Any]) -> set[str]:
    """The servers known once ``data`` is imported: the document's and the database's."""
    listed = {s["slug"] for s in data.get("mcp_servers", [])}
    return listed | set(McpServer.objects.values_list("slug", flat=True))


def mcp_permissions(data: Mapping[str, Any]) -> set[str]:
    """The permissions the document's servers bring (each server's own)."""
    return {server_permission(s["slug"]) for s in data.get("mcp_servers", [])}


class KnownTools(Collection[str]):
    """Tool names a document may use: ``names``, and every tool of a known server (a
    server's tools are listed on each installation, after the import)."""

    def __init__(self, names: Collection[str], servers: Collection[str]) -> None:
        self.names, self.servers = names, servers

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        parts = split_mcp_tool_name(name)
        return name in self.names or (parts is not None and parts[0] in self.servers)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def mcp_server_problems(data: Mapping[str, Any]) -> list[str]:
    """Each registration as admin and the API would check it (names of fields)."""
    problems: list[str] = []
    for item in data.get("mcp_servers", []):
        try:
            McpServer(**item).full_clean(validate_unique=False, validate_constraints=False)
        except ValidationError as exc:
            problems += [
                f"mcp server {item['slug']}: {field}: {' '.join(messages)}"
                for field, messages in exc.message_dict.items()
            ]
    return problems


def argument_limit_problems(
    data: Mapping[str, Any], *, known_roles: Collection[str], servers: Collection[str]
) -> list[str]:
    """Each limit's role and tool must exist (here or in the document); its schema must be
    a JSON Schema."""
    problems: list[str] = []
    tools = KnownTools(set(declared_tools()), servers)
    for item in data.get("argument_limits", []):
        where = f"argument limit {item['role']} {item['tool']}"
        if item["role"] not in known_roles:
            problems.append(f"{where}: unknown role {item['role']!r}")
        if item["tool"] not in tools:
            problems.append(f"{where}: neither a built-in tool nor a known server's tool")
        try:
            Draft202012Validator.check_schema(item["schema"])
        except SchemaError as exc:
            problems.append(f"{where}: not a JSON Schema: {exc.message}")
    return problems


# -- import ---------------------------------------------------------------------------
class McpWriter:
    """Writes the MCP sections of a checked document through ``roles.services.mcp``."""

    def __init__(self, *, actor: str | None, user: AbstractBaseUser | None) -> None:
        self.actor, self.user = actor, user

    def servers(self, items: list[dict[str, Any]]) -> int:
        existing = {s.slug: s for s in McpServer.objects.all()}
        defaults = McpServer()
        for item in items:
            server = existing.get(item["slug"]) or McpServer(slug=item["slug"])
            for name in SERVER_FIELDS:
                setattr(server, name, item.get(name, getattr(defaults, name)))
            mcp_server_save(server=server, actor=self.actor, user=self.user)
        return len(items)

    def limits(self, items: list[dict[str, Any]]) -> int:
        roles = {r.slug: r for r in Role.objects.all()}
        existing = {
            (x.role.slug, x.tool): x for x in McpArgumentLimit.objects.select_related("role")
        }
        for item in items:
            limit = existing.get((item["role"], item["tool"])) or McpArgumentLimit(
                role=roles[item["role"]], tool=item["tool"]
            )
            limit.schema = item["schema"]
            mcp_argument_limit_save(limit=limit, actor=self.actor, user=self.user)
        return len(items)

    def remove_absent(self, data: Mapping[str, Any]) -> list[str]:
        """Delete limits and servers the document lacks (``replace``)."""
        removed: list[str] = []
        kept = {(x["role"], x["tool"]) for x in data.get("argument_limits", [])}
        for limit in McpArgumentLimit.objects.select_related("role"):
            if (limit.role.slug, limit.tool) not in kept:
                removed.append(f"argument limit {limit.role.slug} {limit.tool}")
                mcp_argument_limit_delete(limit=limit, actor=self.actor, user=self.user)
        slugs = {s["slug"] for s in data.get("mcp_servers", [])}
        for server in McpServer.objects.exclude(slug__in=slugs):
            removed.append(f"mcp server {server.slug}")
            mcp_server_delete(server=server, actor=self.actor, user=self.user)
        return removed
