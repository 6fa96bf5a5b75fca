"""Shapes of workflow templates and risk signals."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from sessions_app.apis.serializers.enums import enum_field
from sessions_app.apis.serializers.runs import (
    NULLABLE_TEXT,
    RiskTierField,
    StagePurposeField,
)
from sessions_app.models import RiskSignal, SignalKind, WorkflowStage, WorkflowTemplate

SignalKindField = enum_field(SignalKind, "SignalKindEnum")


class WorkflowStageOutput(serializers.Serializer):
    position = serializers.IntegerField()
    purpose = StagePurposeField()
    role = serializers.SerializerMethodField(help_text="Role slug; null for the approval gate.")
    role_name = serializers.SerializerMethodField()
    max_llm_calls = serializers.IntegerField(help_text="0: the role's own limit.")
    max_tokens = serializers.IntegerField(help_text="0: the role's own limit.")
    timeout_seconds = serializers.IntegerField(help_text="0: the role's own limit.")
    model = serializers.CharField(help_text="Model endpoint override; empty: the role's.")
    commands = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Test stages: argument lists the stage's job runs in order without a model "
        "(the host-validation lane); empty: a model decides.",
    )

    @extend_schema_field(NULLABLE_TEXT)
    def get_role(self, obj: WorkflowStage) -> str | None:
        return obj.role.slug if obj.role is not None else None

    @extend_schema_field(NULLABLE_TEXT)
    def get_role_name(self, obj: WorkflowStage) -> str | None:
        return obj.role.name if obj.role is not None else None


class WorkflowOutput(serializers.ModelSerializer):
    stages = WorkflowStageOutput(many=True)

    class Meta:
        model = WorkflowTemplate
        fields = [
            "slug",
            "name",
            "description",
            "risk_tier",
            "enabled",
            "final_review",
            "max_revisions_per_step",
            "max_revisions_per_run",
            "max_test_attempts",
            "review_model_differs",
            "max_llm_calls",
            "max_tokens",
            "max_seconds",
            "approval_ttl_minutes",
            "stages",
        ]


class RiskSignalOutput(serializers.ModelSerializer):
    kind = SignalKindField()
    tier = RiskTierField()
    patterns = serializers.ListField(child=serializers.CharField())

    class Meta:
        model = RiskSignal
        fields = [
            "name", "description", "kind", "patterns", "threshold", "tier", "score",
            "sensitive", "enabled",
        ]  # fmt: skip


class WorkflowImportOutput(serializers.Serializer):
    templates = serializers.IntegerField(help_text="Templates written (created or updated).")
    stages = serializers.IntegerField()
    signals = serializers.IntegerField(help_text="Risk signals written.")
    removed = serializers.ListField(
        child=serializers.CharField(), help_text="What --replace removed."
    )
    disabled = serializers.ListField(
        child=serializers.CharField(),
        help_text="Templates --replace would remove but runs still use: disabled instead.",
    )
