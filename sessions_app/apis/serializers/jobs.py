"""Shapes of jobs, their events, context and the tools of a session."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from acode.inputs import CommaSeparated, Input, Query, Text
from roles.registry import registry
from sessions_app.apis.serializers.sessions import (
    ROLE_NAME_MAX_CHARS,
    TASK_MAX_CHARS,
    version_number,
)
from sessions_app.models import Job, JobStatus


class JobEventOutput(serializers.Serializer):
    seq = serializers.IntegerField()
    kind = serializers.CharField()
    data = serializers.JSONField()  # type: ignore[assignment]
    created_at = serializers.DateTimeField()


class JobOutput(serializers.ModelSerializer):
    session = serializers.UUIDField(source="session_id")
    parent = serializers.UUIDField(  # type: ignore[assignment]  # a field, not Field.parent
        source="parent_id", allow_null=True, read_only=True,
        help_text="The job that delegated this one (a sub-agent's); null otherwise.",
    )  # fmt: skip
    resumed_from = serializers.UUIDField(
        source="resumed_from_id", allow_null=True, read_only=True,
        help_text="The job that stopped at a limit and this one continues (POST "
        "/api/jobs/{id}/resume/); null otherwise.",
    )  # fmt: skip
    escalation = serializers.JSONField(
        read_only=True,
        help_text="A block on its way up the chain: kind (question or failed), from (the "
        "role it started at), via (the roles it climbed through), reason, handled (parent "
        "or person, once passed on); asked: the block this job put to a person (consent).",
    )
    role = serializers.SerializerMethodField()
    role_version = serializers.SerializerMethodField()

    @extend_schema_field(OpenApiTypes.STR)
    def get_role(self, obj: Job) -> str:
        return registry.by_id(obj.role_id).slug

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_role_version(self, obj: Job) -> int | None:
        return version_number(obj, obj.role_id, obj.role_version_id)

    class Meta:
        model = Job
        fields = [
            "id",
            "session",
            "role",
            "role_version",
            "request",
            "status",
            "provider",
            "model",
            "endpoint",
            "fallback_used",
            "llm_calls",
            "tokens_in",
            "tokens_out",
            "result",
            "error_code",
            "error_message",
            "attempts",
            "cancel_requested",
            "parent",
            "resumed_from",
            "escalation",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
        ]


class JobDetailOutput(JobOutput):
    events = JobEventOutput(many=True)
    queue_consumed = serializers.BooleanField(
        allow_null=True,
        read_only=True,
        help_text="For a queued job: whether a live worker consumes its queue (false: it "
        "waits until one starts); null once the job left the queue.",
    )

    class Meta(JobOutput.Meta):
        fields = [*JobOutput.Meta.fields, "queue_consumed", "events"]


class JobEventsQuery(Query):
    after = serializers.IntegerField(
        min_value=0,
        max_value=2**31 - 1,
        required=False,
        default=0,
        help_text="Only events with a higher seq.",
    )


class SessionJobsQuery(Query):
    status = CommaSeparated(
        choices=JobStatus.values, required=False, help_text="Only jobs in these statuses."
    )


class JobCreateInput(Input):
    request = Text(max_length=TASK_MAX_CHARS)


class ContextQuery(Query):
    role = Text(
        max_length=ROLE_NAME_MAX_CHARS,
        required=False,
        help_text="Role to build for (default: the current role)",
    )
    task = Text(
        max_length=1000, required=False, help_text="Request text (default: the session task)"
    )


class ContextFileOutput(serializers.Serializer):
    path = serializers.CharField()
    tokens = serializers.IntegerField()
    mode = serializers.CharField()
    share = serializers.FloatField()


class ContextOutput(serializers.Serializer):
    role = serializers.CharField()
    strategy = serializers.CharField()
    requested_strategy = serializers.CharField()
    budget = serializers.IntegerField()
    token_count = serializers.IntegerField()
    files = ContextFileOutput(many=True)
    notes = serializers.ListField(child=serializers.CharField())


class SessionToolsOutput(serializers.Serializer):
    role = serializers.CharField()
    available = serializers.ListField(child=serializers.DictField())
    restricted = serializers.ListField(child=serializers.DictField())
