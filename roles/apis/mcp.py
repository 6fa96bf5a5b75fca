"""REST API for MCP servers, their pinned tool definitions and roles' argument limits.

Reads are open to every signed-in user, as the roles API and its YAML export are: a
registration holds no secret (only names of acode's environment variables), and tool
descriptions reach every role's model anyway. Writes need Django's model permissions, as
in admin. Every state change goes through ``roles.services.mcp``; listing a server's tools
goes through ``roles.signals.mcp_refresh_requested``, since the sessions app runs servers.
"""

from __future__ import annotations

import copy

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import DjangoModelPermissions, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import AcodeError, error_responses
from acode.yamldoc import integral_numbers
from roles import selectors
from roles.apis import ROLE_NAME
from roles.apis.mcp_shapes import (
    ArgumentLimitCreateInput,
    ArgumentLimitOutput,
    ArgumentLimitUpdateInput,
    McpServerOutput,
    McpServerUpdateInput,
    McpToolApproveInput,
    McpToolOutput,
    create_problems,
    limit_data,
    server_data,
    tool_data,
    valid_input,
)
from roles.mcp_models import McpArgumentLimit, McpServer
from roles.portability.mcp import SERVER_CREATE_SCHEMA
from roles.registry import registry
from roles.services.mcp import (
    mcp_argument_limit_delete,
    mcp_argument_limit_save,
    mcp_server_delete,
    mcp_server_save,
    mcp_tool_approve,
)
from roles.signals import mcp_refresh_requested

SERVER_NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, description="The server's slug.")
TOOL_NAME = OpenApiParameter(
    "tool", str, OpenApiParameter.PATH, description="The tool's name, as the server lists it."
)
LIMITED_TOOL = OpenApiParameter(
    "tool", str, OpenApiParameter.PATH, description="The tool's registry name."
)
# Listing a tool server: what reaching it can fail with (an answer, not an error status).
REACH_CODES = ("ACODE-MCP-001", "ACODE-MCP-002", "ACODE-MCP-003", "ACODE-MCP-006")


# -- permissions ------------------------------------------------------------------------------
class ModelWritePermission(DjangoModelPermissions):
    """Writes need Django's model permissions on the view's model (add/change/delete), as
    in admin; a POST that changes an existing row (refresh, approve) needs change."""


class ChangePermission(DjangoModelPermissions):
    perms_map = {
        **DjangoModelPermissions.perms_map,
        "POST": ["%(app_label)s.change_%(model_name)s"],
    }


SERVER_CODES = ("ACODE-API-400", "ACODE-MCP-007")  # the form, then how it holds together


# -- MCP servers ------------------------------------------------------------------------------
class McpServerCollectionApi(APIView):
    """``GET`` lists registrations; ``POST`` registers one (needs ``roles.add_mcpserver``)."""

    permission_classes = [IsAuthenticated, ModelWritePermission]
    queryset = selectors.mcp_servers_all().none()

    @extend_schema(responses=McpServerOutput(many=True), operation_id="mcp_servers_list")
    def get(self, request: Request) -> Response:
        return Response([server_data(s) for s in selectors.mcp_servers_all()])

    @extend_schema(
        request={"application/json": copy.deepcopy(SERVER_CREATE_SCHEMA)},
        responses={201: McpServerOutput, **error_responses(*SERVER_CODES, "ACODE-API-409")},
        operation_id="mcp_servers_create",
    )
    def post(self, request: Request) -> Response:
        problems = create_problems(request.data)
        if problems:
            raise AcodeError(
                "ACODE-MCP-007",
                "Invalid MCP server: " + "; ".join(problems),
                {"problems": problems},
            )
        data = dict(integral_numbers(request.data))
        if selectors.mcp_servers_all().filter(slug=data["slug"]).exists():
            raise AcodeError(
                "ACODE-API-409", f"An MCP server is already named {data['slug']!r}.", data
            )
        server = mcp_server_save(server=McpServer(**data), user=request.user)  # type: ignore[arg-type]
        return Response(server_data(selectors.mcp_server_row(server.slug)), status=201)


class McpServerResourceApi(APIView):
    """``GET`` shows a registration; ``PATCH`` and ``DELETE`` need change/delete."""

    permission_classes = [IsAuthenticated, ModelWritePermission]
    queryset = selectors.mcp_servers_all().none()

    @extend_schema(
        responses={200: McpServerOutput, **error_responses("ACODE-API-404")},
        parameters=[SERVER_NAME],
        operation_id="mcp_servers_retrieve",
    )
    def get(self, request: Request, name: str) -> Response:
        return Response(server_data(selectors.mcp_server_row(name)))

    @extend_schema(
        request=McpServerUpdateInput,
        responses={200: McpServerOutput, **error_responses(*SERVER_CODES, "ACODE-API-404")},
        parameters=[SERVER_NAME],
        operation_id="mcp_servers_update",
    )
    def patch(self, request: Request, name: str) -> Response:
        server = selectors.mcp_server_row(name)
        for field, value in valid_input(McpServerUpdateInput, request).items():
            setattr(server, field, value)
        mcp_server_save(server=server, user=request.user)  # type: ignore[arg-type]
        return Response(server_data(selectors.mcp_server_row(name)))

    @extend_schema(
        responses={204: None, **error_responses("ACODE-API-404")},
        parameters=[SERVER_NAME],
        operation_id="mcp_servers_destroy",
    )
    def delete(self, request: Request, name: str) -> Response:
        mcp_server_delete(server=selectors.mcp_server_row(name), user=request.user)  # type: ignore[arg-type]
        return Response(status=204)


class McpServerToolsApi(APIView):
    @extend_schema(
        responses={200: McpToolOutput(many=True), **error_responses("ACODE-API-404")},
        parameters=[SERVER_NAME],
        operation_id="mcp_servers_tools",
        description="The server's tools as last listed: each definition listed now and the "
        "one approved (descriptions reach the model), their hashes, state and diff.",
    )
    def get(self, request: Request, name: str) -> Response:
        server = selectors.mcp_server_row(name)
        return Response([tool_data(t) for t in server.tools.all()])


class McpRefreshErrorOutput(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class McpRefreshOutput(serializers.Serializer):
    listed = serializers.BooleanField(help_text="Whether the server answered with its tools.")
    error = McpRefreshErrorOutput(allow_null=True, help_text="Why not (also its last_error).")
    tools = McpToolOutput(many=True)


class McpServerRefreshApi(APIView):
    permission_classes = [IsAuthenticated, ChangePermission]
    queryset = selectors.mcp_servers_all().none()

    @extend_schema(
        request=None,
        responses={200: McpRefreshOutput, **error_responses("ACODE-API-404")},
        parameters=[SERVER_NAME],
        operation_id="mcp_servers_refresh",
        description="List the server's tools now and pin each definition: a new tool waits "
        "for approval; an approved tool whose definition changed is disabled until approved "
        "again (audited). A server that cannot be reached is an answer too, as a model "
        "endpoint's check is: `listed` false, the error (ACODE-MCP-001, -002, -003 or -006) "
        "and the tools as last listed. Needs roles.change_mcpserver.",
    )
    def post(self, request: Request, name: str) -> Response:
        server = selectors.mcp_server_row(name)
        error = None
        try:
            mcp_refresh_requested.send(
                sender=None, server=server, actor=request.user.get_username()
            )
        except AcodeError as failure:
            if failure.code not in REACH_CODES:
                raise
            error = {"code": failure.code, "message": failure.message}
        tools = [tool_data(t) for t in selectors.mcp_server_row(name).tools.all()]
        return Response({"listed": error is None, "error": error, "tools": tools})


class McpToolApproveApi(APIView):
    permission_classes = [IsAuthenticated, ChangePermission]
    queryset = selectors.mcp_tools_all().none()

    @extend_schema(
        request=McpToolApproveInput,
        responses={
            200: McpToolOutput,
            **error_responses("ACODE-API-400", "ACODE-API-404", "ACODE-MCP-009"),
        },
        parameters=[SERVER_NAME, TOOL_NAME],
        operation_id="mcp_tools_approve",
        description="Approve the definition the server lists now, named by the hash you "
        "were shown; a different one is refused (ACODE-MCP-009). Needs "
        "roles.change_mcptooldefinition.",
    )
    def post(self, request: Request, name: str, tool: str) -> Response:
        row = selectors.mcp_tool_row(selectors.mcp_server_row(name), tool)
        expected = valid_input(McpToolApproveInput, request)["hash"]
        approved = mcp_tool_approve(tool=row, user=request.user, expected_hash=expected)  # type: ignore[arg-type]
        return Response(tool_data(approved))


# -- argument limits --------------------------------------------------------------------------
LIMIT_CODES = ("ACODE-API-400", "ACODE-MCP-008", "ACODE-ROL-001", "ACODE-API-404")


class ArgumentLimitCollectionApi(APIView):
    """``GET`` lists a role's own limits; ``POST`` adds one (``roles.add_mcpargumentlimit``)."""

    permission_classes = [IsAuthenticated, ModelWritePermission]
    queryset = selectors.argument_limits_all().none()

    @extend_schema(
        responses={200: ArgumentLimitOutput(many=True), **error_responses("ACODE-ROL-001")},
        parameters=[ROLE_NAME],
        operation_id="roles_argument_limits_list",
    )
    def get(self, request: Request, name: str) -> Response:
        slug = registry.get(name).slug
        return Response([limit_data(x) for x in selectors.argument_limits_of(slug)])

    @extend_schema(
        request=ArgumentLimitCreateInput,
        responses={201: ArgumentLimitOutput, **error_responses(*LIMIT_CODES, "ACODE-API-409")},
        parameters=[ROLE_NAME],
        operation_id="roles_argument_limits_create",
    )
    def post(self, request: Request, name: str) -> Response:
        role = selectors.role_row(registry.get(name).slug)
        data = valid_input(ArgumentLimitCreateInput, request)
        if selectors.argument_limits_of(role.slug).filter(tool=data["tool"]).exists():
            raise AcodeError(
                "ACODE-API-409",
                f"Role {role.slug} already limits {data['tool']}: change it with PUT.",
                {"role": role.slug, "tool": data["tool"]},
            )
        limit = McpArgumentLimit(role=role, **data)
        mcp_argument_limit_save(limit=limit, user=request.user)  # type: ignore[arg-type]
        return Response(limit_data(limit), status=201)


class ArgumentLimitResourceApi(APIView):
    """One role's limit on one tool: ``PUT`` replaces its schema, ``DELETE`` removes it."""

    permission_classes = [IsAuthenticated, ModelWritePermission]
    queryset = selectors.argument_limits_all().none()

    @extend_schema(
        responses={200: ArgumentLimitOutput, **error_responses("ACODE-ROL-001", "ACODE-API-404")},
        parameters=[ROLE_NAME, LIMITED_TOOL],
        operation_id="roles_argument_limits_retrieve",
    )
    def get(self, request: Request, name: str, tool: str) -> Response:
        return Response(limit_data(selectors.argument_limit_row(registry.get(name).slug, tool)))

    @extend_schema(
        request=ArgumentLimitUpdateInput,
        responses={200: ArgumentLimitOutput, **error_responses(*LIMIT_CODES)},
        parameters=[ROLE_NAME, LIMITED_TOOL],
        operation_id="roles_argument_limits_update",
    )
    def put(self, request: Request, name: str, tool: str) -> Response:
        limit = selectors.argument_limit_row(registry.get(name).slug, tool)
        limit.schema = valid_input(ArgumentLimitUpdateInput, request)["schema"]
        mcp_argument_limit_save(limit=limit, user=request.user)  # type: ignore[arg-type]
        return Response(limit_data(limit))

    @extend_schema(
        responses={204: None, **error_responses("ACODE-ROL-001", "ACODE-API-404")},
        parameters=[ROLE_NAME, LIMITED_TOOL],
        operation_id="roles_argument_limits_destroy",
    )
    def delete(self, request: Request, name: str, tool: str) -> Response:
        limit = selectors.argument_limit_row(registry.get(name).slug, tool)
        mcp_argument_limit_delete(limit=limit, user=request.user)  # type: ignore[arg-type]
        return Response(status=204)
