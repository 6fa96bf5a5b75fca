"""Input and output shapes of the MCP API (``roles.apis.mcp``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request

from acode.inputs import Input, Text, json_schema_problems
from roles.mcp_models import McpArgumentLimit, McpServer, McpToolDefinition, McpTransport
from roles.mcp_tools import mcp_tool_name, server_permission
from roles.portability.mcp import SERVER_CREATE_SCHEMA, SERVER_FIELDS
from roles.services.mcp import definition_diff


def _secret_names(what: str) -> serializers.DictField:
    return serializers.DictField(
        child=Text(max_length=128, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"),
        required=False,
        help_text=f"{what} -> the name of acode's environment variable holding its value "
        "(never the value itself).",
    )


# -- output shapes --------------------------------------------------------------------------
class McpToolSummaryOutput(serializers.Serializer):
    name = serializers.CharField()
    registry_name = serializers.CharField(help_text="mcp__<server>__<tool>")
    state = serializers.CharField()
    offered = serializers.BooleanField()


class McpServerOutput(serializers.Serializer):
    slug = serializers.CharField()
    description = serializers.CharField()
    transport = serializers.ChoiceField(choices=McpTransport.choices)
    command = serializers.ListField(child=serializers.CharField())
    read_only_paths = serializers.ListField(child=serializers.CharField())
    url = serializers.CharField()
    env_secrets = serializers.DictField(child=serializers.CharField())
    header_secrets = serializers.DictField(child=serializers.CharField())
    network = serializers.BooleanField()
    call_timeout_seconds = serializers.IntegerField()
    max_output_chars = serializers.IntegerField()
    enabled = serializers.BooleanField()
    status = serializers.CharField()
    last_error = serializers.CharField()
    checked_at = serializers.DateTimeField(allow_null=True)
    permission = serializers.CharField(help_text="The permission that grants its tools.")
    tools = McpToolSummaryOutput(many=True)


class McpToolOutput(McpToolSummaryOutput):
    server = serializers.CharField()
    live_definition = serializers.DictField(help_text="What the server lists now.")
    live_hash = serializers.CharField()
    approved_definition = serializers.DictField(allow_null=True)
    approved_hash = serializers.CharField()
    approved_by = serializers.CharField()
    approved_at = serializers.DateTimeField(allow_null=True)
    seen_at = serializers.DateTimeField()
    diff = serializers.CharField(help_text="Unified diff from the approved definition.")


class ArgumentLimitOutput(serializers.Serializer):
    role = serializers.CharField()
    tool = serializers.CharField()
    schema = serializers.DictField()


def _summary(tool: McpToolDefinition, slug: str) -> dict[str, Any]:
    return {
        "name": tool.name,
        "registry_name": mcp_tool_name(slug, tool.name),
        "state": tool.state,
        "offered": tool.offered,
    }


def server_data(server: McpServer) -> dict[str, Any]:
    data = {name: getattr(server, name) for name in SERVER_FIELDS}
    data.update(status=server.status, last_error=server.last_error, checked_at=server.checked_at)
    data["permission"] = server_permission(server.slug)
    data["tools"] = [_summary(t, server.slug) for t in server.tools.all()]
    return data


def tool_data(tool: McpToolDefinition) -> dict[str, Any]:
    moved = tool.approved_hash and tool.approved_hash != tool.live_hash
    return {
        **_summary(tool, tool.server.slug),
        "server": tool.server.slug,
        "live_definition": tool.live_definition,
        "live_hash": tool.live_hash,
        "approved_definition": tool.approved_definition,
        "approved_hash": tool.approved_hash,
        "approved_by": tool.approved_by,
        "approved_at": tool.approved_at,
        "seen_at": tool.seen_at,
        "diff": definition_diff(tool) if moved else "",
    }


def limit_data(limit: McpArgumentLimit) -> dict[str, Any]:
    return {"role": limit.role.slug, "tool": limit.tool, "schema": limit.schema}


# -- input shapes ---------------------------------------------------------------------------
class McpServerUpdateInput(Input):
    description = Text(max_length=255, required=False, allow_blank=True)
    transport = serializers.ChoiceField(choices=McpTransport.choices, required=False)
    command = serializers.ListField(child=Text(max_length=4096), max_length=256, required=False)
    read_only_paths = serializers.ListField(
        child=Text(max_length=4096, pattern="^/"), max_length=256, required=False
    )
    url = Text(max_length=500, required=False, allow_blank=True)
    env_secrets = _secret_names("stdio: a variable the server sees")
    header_secrets = _secret_names("HTTP: a header sent")
    network = serializers.BooleanField(required=False)
    call_timeout_seconds = serializers.IntegerField(min_value=1, max_value=3600, required=False)
    max_output_chars = serializers.IntegerField(min_value=1, max_value=10_000_000, required=False)
    enabled = serializers.BooleanField(required=False)


class McpToolApproveInput(Input):
    hash = Text(max_length=64, help_text="The live_hash of the definition shown (GET .../tools/).")


@extend_schema_field({"type": "object", "minProperties": 1, "additionalProperties": {}})
class LimitSchemaField(serializers.DictField):
    """A JSON Schema fragment: an object with at least one keyword."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            allow_empty=False, help_text="A JSON Schema fragment each call must also fit.", **kwargs
        )


class ArgumentLimitCreateInput(Input):
    tool = Text(max_length=200, help_text="A tool's registry name, e.g. mcp__tracker__issues.")
    schema = LimitSchemaField()


class ArgumentLimitUpdateInput(Input):
    schema = LimitSchemaField()


def create_problems(data: Any) -> list[str]:
    """What the published schema refuses in a new registration, said against the variant
    its transport picks (a oneOf's own message names neither field)."""
    if not json_schema_problems(SERVER_CREATE_SCHEMA, data):
        return []
    http = isinstance(data, dict) and data.get("transport") == "http"
    variant = SERVER_CREATE_SCHEMA["oneOf"][1 if http else 0]
    problems = json_schema_problems(variant, data) or json_schema_problems(
        SERVER_CREATE_SCHEMA, data
    )
    return [_unechoed(p) for p in problems]


def _unechoed(problem: str) -> str:
    # A value where a variable's name belongs may be the secret itself: never echo it.
    where = problem.partition(":")[0]
    if where.startswith(("env_secrets/", "header_secrets/")):
        return f"{where}: the name of an environment variable of acode's (letters, digits, _), never its value"
    return problem


def valid_input(shape: type[Input], request: Request) -> dict[str, Any]:
    data = shape(data=request.data)
    data.is_valid(raise_exception=True)
    return dict(data.validated_data)
