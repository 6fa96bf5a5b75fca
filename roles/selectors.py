"""Reads of the roles app that callers share."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from django.db.models import Model, QuerySet

from acode.errors import AcodeError
from acode.llm import Endpoint, default_endpoint, endpoint_from_row
from roles.models import (
    McpArgumentLimit,
    McpServer,
    McpToolDefinition,
    ModelEndpoint,
    PromptPack,
    Role,
    RoleDraft,
    RoleVersion,
)

_M = TypeVar("_M", bound=Model)


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


def endpoint_names() -> list[str]:
    """Names of the enabled model endpoints (what a role or a project config may name)."""
    return list(ModelEndpoint.objects.filter(enabled=True).values_list("name", flat=True))


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


# -- MCP servers, their pinned tools and roles' argument limits (issue 24) ---------------


def mcp_servers_all() -> QuerySet[McpServer]:
    return McpServer.objects.all()


def _mcp_row(rows: QuerySet[_M], message: str, details: dict[str, str]) -> _M:
    """The first of ``rows``; none is ACODE-MCP-008 (``message``, ``details``)."""
    row = rows.first()
    if row is None:
        raise AcodeError("ACODE-MCP-008", message, details)
    return row


def mcp_server_row(slug: str) -> McpServer:
    """The server ``slug``; an unknown one is ACODE-MCP-008."""
    return _mcp_row(
        McpServer.objects.filter(slug=slug), f"No MCP server is named {slug!r}.", {"server": slug}
    )


def mcp_tools_of(server: McpServer) -> list[McpToolDefinition]:
    return list(McpToolDefinition.objects.filter(server=server).select_related("server"))


def mcp_tools_all() -> QuerySet[McpToolDefinition]:
    return McpToolDefinition.objects.all()


def mcp_tool_row(server: McpServer, name: str) -> McpToolDefinition:
    return _mcp_row(
        McpToolDefinition.objects.filter(server=server, name=name),
        f"MCP server {server.slug!r} has listed no tool {name!r}.",
        {"server": server.slug, "tool": name},
    )


def argument_limits_all() -> QuerySet[McpArgumentLimit]:
    return McpArgumentLimit.objects.all()


def argument_limits_of(role: Role) -> list[McpArgumentLimit]:
    return list(McpArgumentLimit.objects.filter(role=role).select_related("role"))


def argument_limit_row(role: Role, tool: str) -> McpArgumentLimit:
    return _mcp_row(
        McpArgumentLimit.objects.filter(role=role, tool=tool).select_related("role"),
        f"Role {role.slug!r} has no argument limit on {tool!r}.",
        {"role": role.slug, "tool": tool},
    )


def role_version_number(version_id: int) -> int | None:
    """The number of the role version ``version_id``, or None when there is none."""
    number = RoleVersion.objects.filter(pk=version_id).values_list("number", flat=True).first()
    return int(number) if number is not None else None


def role_drafts(*, status: str | None = None, role: str | None = None) -> QuerySet[RoleDraft]:
    """Drafts of protected roles, newest first; only ``status`` or ``role`` (a slug)."""
    drafts = RoleDraft.objects.order_by("-id")
    if status:
        drafts = drafts.filter(status=status)
    if role:
        drafts = drafts.filter(role_slug=role)
    return drafts


def role_draft_row(pk: int) -> RoleDraft:
    """One draft by id (ACODE-API-404 when there is none)."""
    draft = RoleDraft.objects.filter(pk=pk).first()
    if draft is None:
        raise AcodeError("ACODE-API-404", f"No role draft #{pk}.", {"draft": pk})
    return draft


def role_draft_is_stale(draft: RoleDraft) -> bool:
    """Whether the role moved on since the draft was made (another version, or none)."""
    current = (
        RoleVersion.objects.filter(role_slug=draft.role_slug)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
    return draft.role_id is None or current != draft.base_number
