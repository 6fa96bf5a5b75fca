"""Request and response shapes of the MCP API (``roles.apis.mcp``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from acode.inputs import JSON_VALUE_REF, NO_NUL, Input, Text
from roles.mcp.models import shown_url

SLUG_PATTERN = "^[-a-zA-Z0-9_]+$"  # the model's SlugField (its other checks answer 409)


@extend_schema_field(
    {
        "type": "object",
        "propertyNames": {"pattern": "^[A-Za-z0-9_-]{1,128}$"},
        "additionalProperties": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,127}$"},
    }
)
class SecretNames(serializers.DictField):
    """Name (a variable or header the server gets) -> name of acode's variable."""


class McpServerInput(Input):
    slug = Text(max_length=40, pattern=SLUG_PATTERN)
    description = serializers.CharField(max_length=255, required=False, allow_blank=True)
    transport = serializers.ChoiceField(choices=["stdio", "http"], required=False)
    # Text, not CharField: whitespace alone is blank for both, and only Text's schema says so.
    command = serializers.ListField(
        child=Text(max_length=4096, trim_whitespace=False), required=False
    )  # argv exactly as given
    read_only_paths = serializers.ListField(
        child=Text(max_length=4096, pattern="^/"), required=False
    )
    url = serializers.CharField(max_length=500, required=False, allow_blank=True)
    env_secrets = SecretNames(
        child=serializers.CharField(),
        required=False,
        help_text="Variable the server sees -> name of acode's variable holding its value.",
    )
    header_secrets = SecretNames(
        child=serializers.CharField(),
        required=False,
        help_text="Header sent -> name of acode's variable holding its value.",
    )
    network = serializers.BooleanField(required=False)
    allow_private_network = serializers.BooleanField(
        required=False,
        help_text="HTTP: the URL may be (or resolve to) a loopback, private or link-local address.",
    )
    call_timeout_seconds = serializers.IntegerField(min_value=1, max_value=3600, required=False)
    max_output_chars = serializers.IntegerField(min_value=1, max_value=10_000_000, required=False)
    enabled = serializers.BooleanField(required=False)


class McpServerUpdate(McpServerInput):
    slug = None  # type: ignore[assignment]  # a slug names the server's tools: it cannot change


class McpServerOutput(McpServerInput, serializers.Serializer):
    status = serializers.CharField()
    last_error = serializers.CharField()
    checked_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data: dict[str, Any] = super().to_representation(instance)
        data["url"] = shown_url(str(data.get("url") or ""))
        return data


# Not JSONField(allow_null=True): its schema, oneOf [{}, null], refuses null (both match).
@extend_schema_field({"type": ["object", "null"]})
class ObjectOrNull(serializers.JSONField):
    """A JSON object, or null."""


class McpToolOutput(serializers.Serializer):
    name = serializers.CharField(help_text="The server's name for it.")
    tool = serializers.CharField(help_text="Its name in acode's registry: mcp__<server>__<tool>.")
    state = serializers.CharField()
    offered = serializers.BooleanField(help_text="Approved, and listed exactly as approved.")
    live_definition = serializers.JSONField(help_text="What the server lists now.")
    live_hash = serializers.CharField()
    approved_definition = ObjectOrNull(help_text="Null until an admin approves one.")
    approved_hash = serializers.CharField()
    approved_by = serializers.CharField()
    approved_at = serializers.DateTimeField(allow_null=True)
    seen_at = serializers.DateTimeField()
    diff = serializers.CharField(help_text="Unified diff, approved -> listed now.")


class McpApproveInput(Input):
    hash = Text(
        max_length=64,
        required=True,
        help_text="The live_hash of the definition you read (GET .../tools/): required, so "
        "nothing is approved unread.",
    )


@extend_schema_field(
    {
        "type": "object",
        "minProperties": 1,
        "propertyNames": {"pattern": NO_NUL},
        "additionalProperties": JSON_VALUE_REF,
    }
)
class LimitSchema(serializers.JSONField):
    """A JSON Schema fragment (an object with at least one keyword)."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict) or not data:
            raise serializers.ValidationError("A JSON Schema object with at least one keyword.")
        return super().to_internal_value(data)


class ArgumentLimitInput(Input):
    tool = serializers.CharField(max_length=200)
    schema = LimitSchema(help_text="A JSON Schema fragment every call must also fit.")


class ArgumentLimitUpdate(Input):
    schema = LimitSchema()


class ArgumentLimitOutput(serializers.Serializer):
    role = serializers.CharField(source="role.slug")
    tool = serializers.CharField()
    schema = serializers.JSONField()


class McpRefreshError(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class McpRefreshOutput(serializers.Serializer):
    listed = serializers.BooleanField(help_text="False when the server could not be reached.")
    error = McpRefreshError(allow_null=True, help_text="Why it could not (also its status).")
    tools = McpToolOutput(many=True)
