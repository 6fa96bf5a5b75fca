"""REST API for MCP servers, their pinned tool definitions and roles' argument limits.

Every change goes through ``roles.services.mcp`` (the one path admin takes too). A server's
secrets appear only as the names of acode's environment variables, never their values.
Reading needs the model's view permission (registrations are admin data, as in admin);
writing needs add/change/delete; approving a definition needs ``change_mcptooldefinition``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import DjangoModelPermissions, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import AcodeError, error_responses
from acode.inputs import body_of
from roles import selectors
from roles.apis.mcp_shapes import (
    ArgumentLimitInput,
    ArgumentLimitOutput,
    ArgumentLimitUpdate,
    McpApproveInput,
    McpRefreshOutput,
    McpServerInput,
    McpServerOutput,
    McpServerUpdate,
    McpToolOutput,
)
from roles.apis.roles import ROLE_NAME
from roles.mcp.models import McpArgumentLimit, McpServer, McpToolDefinition
from roles.mcp.tools import mcp_tool_name
from roles.registry import registry
from roles.services.mcp import (
    definition_diff,
    mcp_argument_limit_delete,
    mcp_argument_limit_save,
    mcp_server_delete,
    mcp_server_save,
    mcp_tool_approve,
)
from roles.signals import mcp_refresh_requested

SERVER = OpenApiParameter("slug", str, OpenApiParameter.PATH, description="The server's slug.")
TOOL = OpenApiParameter("tool", str, OpenApiParameter.PATH, description="A tool's name.")
SERVER_FIELDS = (
    "slug", "description", "transport", "command", "read_only_paths", "url", "env_secrets",
    "header_secrets", "network", "allow_private_network", "call_timeout_seconds",
    "max_output_chars", "enabled",
)  # fmt: skip


class McpReadWritePermission(DjangoModelPermissions):
    """Reads need ``view_<model>`` (admin data); writes the usual add/change/delete."""

    perms_map = {**DjangoModelPermissions.perms_map, "GET": ["%(app_label)s.view_%(model_name)s"]}


class McpChangePermission(McpReadWritePermission):
    """Listing a server's tools now or approving a definition changes rows: ``change_``."""

    perms_map = {
        **McpReadWritePermission.perms_map,
        "POST": ["%(app_label)s.change_%(model_name)s"],
    }


def _checked(save: Any, **kwargs: Any) -> Any:
    """Run a save service; the model's own checks answer 400 ACODE-MCP-007 naming fields."""
    try:
        return save(**kwargs)
    except ValidationError as exc:
        fields = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
        # The body had the right shape (the serializer checked it); what the model refuses
        # is how its fields fit together (an HTTP server without a URL): 409, like an
        # import's misfits (ACODE-IMP-003).
        raise AcodeError(
            "ACODE-MCP-009", "Not saved: " + "; ".join(f"{k}: {v}" for k, v in fields.items()),
            {"fields": fields},
        ) from exc  # fmt: skip


_TOOL_FIELDS = (
    "name", "state", "offered", "live_definition", "live_hash", "approved_definition",
    "approved_hash", "approved_by", "approved_at", "seen_at",
)  # fmt: skip


def tool_data(tool: McpToolDefinition) -> dict[str, Any]:
    return {
        **{f: getattr(tool, f) for f in _TOOL_FIELDS},
        "tool": mcp_tool_name(tool.server.slug, tool.name),
        "diff": definition_diff(tool) if tool.approved_hash else "",
    }


class McpServerCollectionApi(APIView):
    permission_classes = [IsAuthenticated, McpReadWritePermission]
    queryset = selectors.mcp_servers_all().none()

    @extend_schema(
        responses={200: McpServerOutput(many=True), **error_responses("ACODE-API-403")},
        operation_id="mcp_servers_list",
    )
    def get(self, request: Request) -> Response:
        return Response(McpServerOutput(selectors.mcp_servers_all(), many=True).data)

    @extend_schema(
        request=McpServerInput,
        responses={
            201: McpServerOutput,
            **error_responses("ACODE-API-403", "ACODE-MCP-007", "ACODE-MCP-009"),
        },
        operation_id="mcp_servers_create",
    )
    def post(self, request: Request) -> Response:
        server = McpServer(**body_of(McpServerInput, request))
        _checked(mcp_server_save, server=server, user=request.user)
        return Response(McpServerOutput(server).data, status=201)


class McpServerResourceApi(APIView):
    permission_classes = [IsAuthenticated, McpReadWritePermission]
    queryset = selectors.mcp_servers_all().none()

    @extend_schema(
        parameters=[SERVER],
        responses={200: McpServerOutput, **error_responses("ACODE-API-403", "ACODE-MCP-008")},
        operation_id="mcp_servers_retrieve",
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(McpServerOutput(selectors.mcp_server_row(slug)).data)

    @extend_schema(
        parameters=[SERVER],
        request=McpServerUpdate,
        responses={
            200: McpServerOutput,
            **error_responses(
                "ACODE-API-403", "ACODE-MCP-007", "ACODE-MCP-009", "ACODE-MCP-008", "ACODE-ROL-015"
            ),
        },
        operation_id="mcp_servers_update",
    )
    def patch(self, request: Request, slug: str) -> Response:
        server = selectors.mcp_server_row(slug)
        for field, value in body_of(McpServerUpdate, request).items():
            setattr(server, field, value)
        _checked(mcp_server_save, server=server, user=request.user)
        return Response(McpServerOutput(server).data)

    @extend_schema(
        parameters=[SERVER],
        responses={204: None, **error_responses("ACODE-API-403", "ACODE-MCP-008")},
        operation_id="mcp_servers_destroy",
    )
    def delete(self, request: Request, slug: str) -> Response:
        mcp_server_delete(server=selectors.mcp_server_row(slug), user=request.user)  # type: ignore[arg-type]
        return Response(status=204)


class McpToolListApi(APIView):
    permission_classes = [IsAuthenticated, McpReadWritePermission]
    queryset = selectors.mcp_servers_all().none()

    @extend_schema(
        parameters=[SERVER],
        responses={
            200: McpToolOutput(many=True),
            **error_responses("ACODE-API-403", "ACODE-MCP-008"),
        },
        operation_id="mcp_servers_tools",
        description="The server's tools as last listed: pinned and current definition, "
        "state and the diff an admin reads before approving.",
    )
    def get(self, request: Request, slug: str) -> Response:
        tools = selectors.mcp_tools_of(selectors.mcp_server_row(slug))
        return Response(McpToolOutput([tool_data(t) for t in tools], many=True).data)


class McpServerRefreshApi(APIView):
    permission_classes = [IsAuthenticated, McpChangePermission]
    queryset = selectors.mcp_servers_all().none()

    @extend_schema(
        parameters=[SERVER],
        request=None,
        responses={
            200: McpRefreshOutput,
            **error_responses("ACODE-API-403", "ACODE-MCP-008"),
        },
        operation_id="mcp_servers_refresh",
        description="List the server's tools now: new ones wait for approval, changed ones "
        "are disabled until approved again (needs change_mcpserver).",
    )
    def post(self, request: Request, slug: str) -> Response:
        server = selectors.mcp_server_row(slug)
        error = None
        for _, result in mcp_refresh_requested.send_robust(
            sender=None, server=server, actor=request.user.get_username()
        ):
            if isinstance(result, Exception):  # the server's failure, not this request's
                error = {"code": str(getattr(result, "code", "ACODE-MCP-001")),
                         "message": str(result)[:2000]}  # fmt: skip
        tools = [tool_data(t) for t in selectors.mcp_tools_of(server)]
        body = {"listed": error is None, "error": error, "tools": tools}
        return Response(McpRefreshOutput(body).data)


class McpToolApproveApi(APIView):
    permission_classes = [IsAuthenticated, McpChangePermission]
    queryset = selectors.mcp_tools_all().none()

    @extend_schema(
        parameters=[SERVER, TOOL],
        request=McpApproveInput,
        responses={
            200: McpToolOutput,
            **error_responses("ACODE-API-403", "ACODE-MCP-008", "ACODE-API-409", "ACODE-ROL-015"),
        },
        operation_id="mcp_tools_approve",
        description="Approve the definition the server lists now (read its description "
        "and diff first: they reach the model). Send the `live_hash` you read as `hash`: if "
        "the server lists another definition by then, nothing is approved (409).",
    )
    def post(self, request: Request, slug: str, tool: str) -> Response:
        row = selectors.mcp_tool_row(selectors.mcp_server_row(slug), tool)
        if row.state == "missing":
            raise AcodeError(
                "ACODE-API-409", f"{tool!r} is no longer listed: nothing to approve.",
                {"server": slug, "tool": tool, "state": row.state},
            )  # fmt: skip
        body = McpApproveInput(data=request.data or {})
        body.is_valid(raise_exception=True)
        row = mcp_tool_approve(
            tool=row,
            user=request.user,  # type: ignore[arg-type]
            expected_hash=body.validated_data.get("hash", ""),
        )
        return Response(McpToolOutput(tool_data(row)).data)


class ArgumentLimitCollectionApi(APIView):
    permission_classes = [IsAuthenticated, McpReadWritePermission]
    queryset = selectors.argument_limits_all().none()

    @extend_schema(
        parameters=[ROLE_NAME],
        responses={
            200: ArgumentLimitOutput(many=True),
            **error_responses("ACODE-API-403", "ACODE-ROL-001"),
        },
        operation_id="argument_limits_list",
    )
    def get(self, request: Request, name: str) -> Response:
        role = selectors.role_row(registry.get(name).slug)
        return Response(ArgumentLimitOutput(selectors.argument_limits_of(role), many=True).data)

    @extend_schema(
        parameters=[ROLE_NAME],
        request=ArgumentLimitInput,
        responses={
            201: ArgumentLimitOutput,
            **error_responses(
                "ACODE-API-403", "ACODE-ROL-001", "ACODE-MCP-007", "ACODE-MCP-009", "ACODE-API-409"
            ),
        },
        operation_id="argument_limits_create",
        description="Narrow a tool's arguments for this role (and its children); the role "
        "gets a new version.",
    )
    def post(self, request: Request, name: str) -> Response:
        role = selectors.role_row(registry.get(name).slug)
        data = body_of(ArgumentLimitInput, request)
        if any(limit.tool == data["tool"] for limit in selectors.argument_limits_of(role)):
            raise AcodeError(
                "ACODE-API-409", f"Role {role.slug!r} already limits {data['tool']!r}: PATCH it.",
                {"role": role.slug, "tool": data["tool"]},
            )  # fmt: skip
        limit = McpArgumentLimit(role=role, **data)
        _checked(mcp_argument_limit_save, limit=limit, user=request.user)
        return Response(ArgumentLimitOutput(limit).data, status=201)


class ArgumentLimitResourceApi(APIView):
    permission_classes = [IsAuthenticated, McpReadWritePermission]
    queryset = selectors.argument_limits_all().none()

    @extend_schema(
        parameters=[ROLE_NAME, TOOL],
        request=ArgumentLimitUpdate,
        responses={
            200: ArgumentLimitOutput,
            **error_responses(
                "ACODE-API-403",
                "ACODE-ROL-001",
                "ACODE-MCP-007",
                "ACODE-MCP-009",
                "ACODE-MCP-008",
                "ACODE-ROL-015",
            ),
        },
        operation_id="argument_limits_update",
    )
    def patch(self, request: Request, name: str, tool: str) -> Response:
        role = selectors.role_row(registry.get(name).slug)
        limit = selectors.argument_limit_row(role, tool)
        limit.schema = body_of(ArgumentLimitUpdate, request)["schema"]
        _checked(mcp_argument_limit_save, limit=limit, user=request.user)
        return Response(ArgumentLimitOutput(limit).data)

    @extend_schema(
        parameters=[ROLE_NAME, TOOL],
        responses={
            204: None,
            **error_responses("ACODE-API-403", "ACODE-ROL-001", "ACODE-MCP-008", "ACODE-ROL-015"),
        },
        operation_id="argument_limits_destroy",
    )
    def delete(self, request: Request, name: str, tool: str) -> Response:
        role = selectors.role_row(registry.get(name).slug)
        limit = selectors.argument_limit_row(role, tool)
        mcp_argument_limit_delete(limit=limit, user=request.user)  # type: ignore[arg-type]
        return Response(status=204)
