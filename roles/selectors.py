"""Reads of the roles app that callers share."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from acode.errors import AcodeError
from acode.llm import Endpoint, default_endpoint, endpoint_from_row
from roles.models import (
    McpArgumentLimit,
    McpServer,
    McpToolDefinition,
    ModelEndpoint,
    PromptPack,
    Role,
)


def endpoint_for(name: str) -> Endpoint:
    """The endpoint a role's model name routes to (empty: the settings default)."""
    if not name:
        return default_endpoint()
    row = ModelEndpoint.objects.filter(name=name, enabled=True).first()
    if row is None:
        raise AcodeError(
            "ACODE-LLM-001",
            f"Unknown or disabled model endpoint {name!r}.",
            {"model": name, "known": list(ModelEndpoint.objects.values_list("name", flat=True))},
        )
    return endpoint_from_row(row)


def roles_all() -> QuerySet[Role]:
    """Every role row (DRF's model permissions read the model from it; no row is read)."""
    return Role.objects.all()


def role_row(slug: str) -> Role:
    """The row of the role ``slug`` (the registry found it first)."""
    return Role.objects.get(slug=slug)


def prompt_pack_row(name: str) -> PromptPack:
    return PromptPack.objects.get(name=name)


def model_endpoints_all() -> QuerySet[ModelEndpoint]:
    """Every model endpoint row (DRF's model permissions read the model from it)."""
    return ModelEndpoint.objects.all()


def model_endpoint_exists(name: str) -> bool:
    return ModelEndpoint.objects.filter(name=name).exists()


def model_endpoint_values(fields: Iterable[str]) -> list[dict[str, Any]]:
    """``fields`` of every model endpoint row, in the model's order."""
    return list(ModelEndpoint.objects.values(*fields))


def _not_found(what: str, name: str) -> AcodeError:
    return AcodeError("ACODE-API-404", f"No {what} is named {name!r}.", {"name": name})


def mcp_servers_all() -> QuerySet[McpServer]:
    """Every MCP server registration, with its tools' rows."""
    return McpServer.objects.prefetch_related("tools")


def mcp_server_row(slug: str) -> McpServer:
    """The registration ``slug`` (ACODE-API-404 when there is none)."""
    row = mcp_servers_all().filter(slug=slug).first()
    if row is None:
        raise _not_found("MCP server", slug)
    return row


def mcp_tools_all() -> QuerySet[McpToolDefinition]:
    """Every pinned tool definition (DRF's model permissions read the model from it)."""
    return McpToolDefinition.objects.select_related("server")


def mcp_tool_row(server: McpServer, name: str) -> McpToolDefinition:
    """The pinned definition of ``server``'s tool ``name`` (ACODE-API-404 when unlisted)."""
    row = McpToolDefinition.objects.select_related("server").filter(server=server, name=name)
    found = row.first()
    if found is None:
        raise _not_found(f"tool of MCP server {server.slug}", name)
    return found


def argument_limits_all() -> QuerySet[McpArgumentLimit]:
    """Every role's argument limits (DRF's model permissions read the model from it)."""
    return McpArgumentLimit.objects.select_related("role")


def argument_limits_of(role_slug: str) -> QuerySet[McpArgumentLimit]:
    return argument_limits_all().filter(role__slug=role_slug)


def argument_limit_row(role_slug: str, tool: str) -> McpArgumentLimit:
    """Role ``role_slug``'s limit on ``tool`` (ACODE-API-404 when it has none)."""
    found = argument_limits_of(role_slug).filter(tool=tool).first()
    if found is None:
        raise _not_found(f"argument limit of role {role_slug}", tool)
    return found
