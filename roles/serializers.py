"""Output shapes of role data for the REST API (built from registry snapshots), and of drafts
of protected roles."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from acode.inputs import Query, Text
from roles import selectors
from roles.models import RoleDraft, RoleDraftStatus
from roles.registry import RoleDef, RuleDef, registry
from roles.tools import TOOL_GROUP_NAMES, tool_group_of


class ToolOutput(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    required_permissions = serializers.ListField(child=serializers.CharField())
    argument_schema = serializers.DictField()
    enabled = serializers.BooleanField()
    group = serializers.CharField(
        help_text="The tool group a role's allowed_tool_groups names to let it through "
        "(empty: none)."
    )


class WithheldToolOutput(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    reason = serializers.CharField()
    missing_permissions = serializers.ListField(child=serializers.CharField())


class RuleOutput(serializers.Serializer):
    from_role = serializers.CharField(source="from_slug")
    to_role = serializers.CharField(source="to_slug")
    precondition = serializers.CharField()
    condition = serializers.CharField(source="condition_text")
    explanation = serializers.CharField()
    implicit = serializers.BooleanField()


class RoleOutput(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    colour = serializers.CharField()
    capabilities = serializers.ListField(child=serializers.CharField())
    constraints = serializers.ListField(child=serializers.CharField())
    prompt_key = serializers.CharField()
    prompt_component = serializers.CharField()
    context_strategy = serializers.CharField()
    permissions = serializers.ListField(child=serializers.CharField())
    effective_permissions = serializers.ListField(child=serializers.CharField())
    tools = serializers.ListField(child=serializers.CharField())
    parent_role = serializers.CharField(allow_null=True)
    version = serializers.IntegerField(allow_null=True)
    content_hash = serializers.CharField()
    protected = serializers.BooleanField(help_text="Changes become drafts another admin publishes.")

    def to_representation(self, instance: Any) -> dict[str, Any]:
        role: RoleDef = instance
        spec = role.spec
        return {
            "slug": spec.slug,
            "name": spec.name,
            "description": spec.description,
            "colour": spec.colour,
            "capabilities": list(spec.capabilities),
            "constraints": list(spec.constraints),
            "prompt_key": spec.prompt_key,
            "prompt_component": role.prompt_component_key,
            "context_strategy": spec.context_strategy,
            "permissions": list(spec.permissions),
            "effective_permissions": sorted(role.access.permissions),
            "tools": list(role.access.tools),
            "parent_role": spec.parent,
            "version": role.version,
            "content_hash": role.content_hash,
            "protected": spec.protected,
        }


class RoleDetailOutput(RoleOutput):
    allowed_tools = serializers.ListField(child=serializers.CharField())
    allowed_tool_groups = serializers.ListField(
        child=serializers.ChoiceField(choices=list(TOOL_GROUP_NAMES)),
        help_text="Tool groups the allow-list lets through whole.",
    )
    write_paths = serializers.ListField(child=serializers.CharField())
    command_patterns = serializers.ListField(child=serializers.JSONField())
    preferred_model = serializers.CharField()
    fallback_model = serializers.CharField()
    reassign_models = serializers.ListField(
        child=serializers.CharField(),
        help_text="Model endpoints, in order, a run moves a blocked plan step to.",
    )
    reasoning_effort = serializers.ChoiceField(
        choices=["", "low", "medium", "high"],
        help_text="Sent to the model as the request's reasoning_effort; empty: not sent.",
    )
    queue = serializers.CharField()
    answer_sets_plan = serializers.BooleanField()
    max_llm_calls = serializers.IntegerField()
    max_tokens = serializers.IntegerField()
    timeout_seconds = serializers.IntegerField()
    available_tools = ToolOutput(many=True)
    withheld_tools = WithheldToolOutput(many=True)
    transitions = RuleOutput(many=True)

    def to_representation(self, instance: Any) -> dict[str, Any]:
        role: RoleDef = instance
        data = super().to_representation(role)
        spec = role.spec
        data.update(
            {
                "allowed_tools": list(spec.allowed_tools),
                "allowed_tool_groups": list(spec.allowed_tool_groups),
                "write_paths": list(spec.write_paths),
                "command_patterns": list(spec.command_patterns),
                "preferred_model": spec.preferred_model,
                "fallback_model": spec.fallback_model,
                "reassign_models": list(spec.reassign_models),
                "reasoning_effort": spec.reasoning_effort,
                "queue": spec.queue,
                "answer_sets_plan": spec.answer_sets_plan,
                "max_llm_calls": spec.max_llm_calls,
                "max_tokens": spec.max_tokens,
                "timeout_seconds": spec.timeout_seconds,
                "available_tools": [tool_data(t) for t in registry.effective_tools(spec.slug)],
                "withheld_tools": [
                    {
                        "name": w.name,
                        "description": w.description,
                        "reason": w.reason,
                        "missing_permissions": list(w.missing_permissions),
                    }
                    for w in role.access.withheld
                ],
                "transitions": [rule_data(r) for r in registry.rules_from(spec.slug)],
            }
        )
        return data


def tool_data(tool: Any) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "required_permissions": list(tool.required_permissions),
        "argument_schema": dict(tool.argument_schema),
        "enabled": tool.enabled,
        "group": tool_group_of(tool.declaration),
    }


def rule_data(rule: RuleDef) -> dict[str, Any]:
    return {
        "from_role": rule.from_slug,
        "to_role": rule.to_slug,
        "precondition": rule.precondition,
        "condition": rule.condition_text,
        "explanation": rule.explanation,
        "implicit": rule.implicit,
    }


class PromptPartOutput(serializers.Serializer):
    layer = serializers.ChoiceField(
        choices=["system", "role", "language", "framework", "constraints"]
    )
    key = serializers.CharField()
    origin = serializers.CharField(help_text="Where the text came from: its pack, or generated.")
    tokens = serializers.IntegerField()
    budget = serializers.IntegerField(allow_null=True)
    cut = serializers.BooleanField()


class ComposedPromptOutput(serializers.Serializer):
    role = serializers.CharField()
    pack = serializers.CharField()
    text = serializers.CharField()
    tokens = serializers.IntegerField()
    components = serializers.ListField(child=serializers.CharField())
    fell_back = serializers.BooleanField()
    notes = serializers.ListField(child=serializers.CharField())
    parts = PromptPartOutput(many=True)
    languages = serializers.ListField(child=serializers.CharField())
    frameworks = serializers.ListField(child=serializers.CharField())


# Not JSONField(allow_null=True): its schema, oneOf [{}, null], refuses null (both match).
@extend_schema_field({"description": "Any JSON value, null included."})
class AnyValue(serializers.JSONField):
    """Any JSON value."""


class FieldChangeOutput(serializers.Serializer):
    field = serializers.CharField()
    before = AnyValue()
    after = AnyValue()


class RoleDraftOutput(serializers.Serializer):
    id = serializers.IntegerField()
    role = serializers.CharField(help_text="The role's slug.")
    base_version = serializers.IntegerField(help_text="The role version it was made on.")
    status = serializers.ChoiceField(choices=RoleDraftStatus.values)
    stale = serializers.BooleanField(help_text="The role has a newer version: cannot publish.")
    author = serializers.CharField()
    created_at = serializers.DateTimeField()
    decided_by = serializers.CharField()
    decided_at = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField()
    diff = FieldChangeOutput(many=True)
    example_results = serializers.ListField(child=serializers.DictField())
    content = serializers.DictField(help_text="The role's full proposed content.")
    replay = serializers.DictField(
        allow_null=True,
        help_text="The open draft replayed against the role's recorded decisions of the last "
        "ACODE_DRAFT_REPLAY_DAYS days (detail only, for users who may change roles; else null).",
    )


def draft_data(draft: RoleDraft, *, replay: dict[str, Any] | None = None) -> dict[str, Any]:
    """A draft as the API shows it, with its ``replay`` (``role_draft_replay_report``) where
    one is shown (the detail, for role admins)."""
    return RoleDraftOutput(
        {
            "id": draft.pk,
            "role": draft.role_slug,
            "base_version": draft.base_number,
            "status": draft.status,
            "stale": draft.status == RoleDraftStatus.OPEN and selectors.role_draft_is_stale(draft),
            "author": draft.author_name,
            "created_at": draft.created_at,
            "decided_by": draft.decided_by_name,
            "decided_at": draft.decided_at,
            "reason": draft.reason,
            "diff": draft.diff,
            "example_results": draft.example_results,
            "content": draft.content,
            "replay": replay,
        }
    ).data


class DraftQuery(Query):
    status = serializers.ChoiceField(
        choices=RoleDraftStatus.values, required=False, help_text="Only drafts in this status."
    )
    role = Text(max_length=64, required=False, help_text="Only drafts of this role (slug).")
