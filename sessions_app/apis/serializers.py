"""Input and output shapes of the sessions API."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from roles.models import RoleVersion
from roles.registry import registry
from sessions_app.models import (
    AgentSession,
    AuditEvent,
    AuditEventType,
    ChangeKind,
    Job,
    PendingChange,
    RiskTier,
    RoleTransition,
    SessionStatus,
    StepStatus,
)


class RoleRefOutput(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    colour = serializers.CharField()


class PlanStepOutput(serializers.Serializer):
    number = serializers.IntegerField()
    title = serializers.CharField()
    detail = serializers.CharField()
    files = serializers.ListField(child=serializers.CharField())
    depends_on = serializers.ListField(child=serializers.IntegerField())
    status = serializers.ChoiceField(choices=StepStatus.choices)


def _iso(moment: Any) -> str | None:
    """Datetimes as DRF renders them (ISO 8601, ``Z`` for UTC)."""
    if moment is None:
        return None
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def role_ref(role_id: int) -> dict[str, str]:
    """A role as shown on sessions: from the registry, no query."""
    role = registry.by_id(role_id)
    return {"slug": role.slug, "name": role.name, "colour": role.spec.colour}


def version_number(obj: Any, role_id: int | None, version_id: int | None) -> int | None:
    """The role version number an object pins; the registry knows the current ones."""
    if version_id is None or role_id is None:
        return None
    role = registry.by_id(role_id)
    if role.version_id == version_id:
        return role.version
    cached = obj._state.fields_cache.get("role_version")
    if cached is not None:
        return int(cached.number)
    number = RoleVersion.objects.filter(pk=version_id).values_list("number", flat=True).first()
    return int(number) if number is not None else None


class SessionOutput(serializers.ModelSerializer):
    current_role = serializers.SerializerMethodField()
    role_version = serializers.SerializerMethodField()
    owner = serializers.CharField(source="owner.username")
    plan = PlanStepOutput(many=True)
    plan_progress = serializers.SerializerMethodField()

    class Meta:
        model = AgentSession
        fields = [
            "id",
            "title",
            "task",
            "owner",
            "workspace",
            "workspace_managed",
            "current_role",
            "role_version",
            "role_since",
            "last_reason",
            "plan",
            "plan_progress",
            "risk_tier",
            "status",
            "created_at",
            "updated_at",
        ]

    @extend_schema_field(RoleRefOutput)
    def get_current_role(self, obj: AgentSession) -> dict[str, str]:
        return role_ref(obj.current_role_id)

    @extend_schema_field(OpenApiTypes.INT)
    def get_role_version(self, obj: AgentSession) -> int | None:
        return version_number(obj, obj.current_role_id, obj.role_version_id)

    def get_plan_progress(self, obj: AgentSession) -> dict[str, int]:
        done = sum(1 for s in obj.plan if s.get("status") in (StepStatus.DONE, StepStatus.SKIPPED))
        return {"done": done, "total": len(obj.plan)}

    def to_representation(self, instance: AgentSession) -> dict[str, Any]:
        # Hot path (every transition answers with the session): build the dict directly
        # instead of instantiating a ModelSerializer's fields per call. The declared
        # fields above still describe it in the OpenAPI schema; a test keeps them equal.
        return {
            "id": str(instance.id),
            "title": instance.title,
            "task": instance.task,
            "owner": instance.owner.username,
            "workspace": instance.workspace,
            "workspace_managed": instance.workspace_managed,
            "current_role": self.get_current_role(instance),
            "role_version": self.get_role_version(instance),
            "role_since": _iso(instance.role_since),
            "last_reason": instance.last_reason,
            "plan": list(instance.plan or []),
            "plan_progress": self.get_plan_progress(instance),
            "risk_tier": instance.risk_tier,
            "status": instance.status,
            "created_at": _iso(instance.created_at),
            "updated_at": _iso(instance.updated_at),
        }


class SessionCreateInput(serializers.Serializer):
    title = serializers.CharField(max_length=200)
    task = serializers.CharField(required=False, allow_blank=True, default="")
    workspace = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, default=None
    )
    risk_tier = serializers.ChoiceField(choices=RiskTier.choices, default=RiskTier.LOW)


class SessionUpdateInput(serializers.Serializer):
    title = serializers.CharField(max_length=200, required=False)
    task = serializers.CharField(required=False, allow_blank=True)
    risk_tier = serializers.ChoiceField(choices=RiskTier.choices, required=False)
    status = serializers.ChoiceField(choices=SessionStatus.choices, required=False)


class TransitionInput(serializers.Serializer):
    to_role = serializers.CharField(max_length=100)
    reason = serializers.CharField(allow_blank=True, trim_whitespace=False)
    expected_role = serializers.CharField(
        max_length=100,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="The role the client believes the session is in. If the session has moved "
        "on, the answer is 409 ACODE-ROL-006 and nothing is written. Stated by the session's "
        "owner, it also lets PostgreSQL make the change in one round trip.",
    )


class TransitionOutput(serializers.ModelSerializer):
    from_role = serializers.SerializerMethodField()
    to_role = serializers.SerializerMethodField()
    role_version = serializers.SerializerMethodField()

    @extend_schema_field(OpenApiTypes.STR)
    def get_from_role(self, obj: RoleTransition) -> str | None:
        return registry.by_id(obj.from_role_id).slug if obj.from_role_id else None

    @extend_schema_field(OpenApiTypes.STR)
    def get_to_role(self, obj: RoleTransition) -> str:
        return registry.by_id(obj.to_role_id).slug

    @extend_schema_field(OpenApiTypes.INT)
    def get_role_version(self, obj: RoleTransition) -> int | None:
        return version_number(obj, obj.to_role_id, obj.role_version_id)

    def to_representation(self, instance: RoleTransition) -> dict[str, Any]:
        return {
            "seq": instance.seq,
            "from_role": self.get_from_role(instance),
            "to_role": self.get_to_role(instance),
            "role_version": self.get_role_version(instance),
            "reason": instance.reason,
            "actor": instance.actor,
            "request_id": instance.request_id,
            "created_at": _iso(instance.created_at),
        }

    class Meta:
        model = RoleTransition
        fields = [
            "seq",
            "from_role",
            "to_role",
            "role_version",
            "reason",
            "actor",
            "request_id",
            "created_at",
        ]


class TransitionResultOutput(serializers.Serializer):
    changed = serializers.BooleanField()
    message = serializers.CharField()
    transition = TransitionOutput(allow_null=True)
    session = SessionOutput()


class AllowedTransitionOutput(serializers.Serializer):
    to_role = serializers.CharField()
    to_role_name = serializers.CharField()
    precondition = serializers.CharField()
    condition = serializers.CharField()
    allowed_now = serializers.BooleanField()
    unmet = serializers.CharField()


class PlanInput(serializers.Serializer):
    steps = serializers.ListField(child=serializers.JSONField(), allow_empty=True)


class StepStatusInput(serializers.Serializer):
    status = serializers.ChoiceField(choices=StepStatus.choices)


class PendingChangeOutput(serializers.ModelSerializer):
    role = serializers.CharField(source="role.slug", allow_null=True, default=None)

    class Meta:
        model = PendingChange
        fields = ["path", "kind", "diff", "role", "created_at", "updated_at"]


class PendingChangeInput(serializers.Serializer):
    path = serializers.CharField(max_length=1000)
    kind = serializers.ChoiceField(choices=ChangeKind.choices)
    diff = serializers.CharField(allow_blank=True, default="")


class ApproveInput(serializers.Serializer):
    summary = serializers.CharField(required=False, allow_blank=True, default="")


class ApproveOutput(serializers.Serializer):
    approved = serializers.IntegerField()


class RoleShareOutput(serializers.Serializer):
    role = serializers.CharField()
    seconds = serializers.FloatField()
    share = serializers.FloatField()
    target = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    within_target = serializers.BooleanField(allow_null=True)


class UsageOutput(serializers.Serializer):
    total_seconds = serializers.FloatField()
    roles = RoleShareOutput(many=True)


class AuditEventOutput(serializers.ModelSerializer):
    session = serializers.UUIDField(source="session_id", allow_null=True)

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "chain",
            "seq",
            "event_type",
            "session",
            "role",
            "actor",
            "target",
            "result",
            "details",
            "created_at",
            "prev_hash",
            "hash",
        ]


class AuditFilterInput(serializers.Serializer):
    event_type = serializers.ChoiceField(choices=AuditEventType.choices, required=False)
    session = serializers.UUIDField(required=False)
    role = serializers.CharField(required=False)
    actor = serializers.CharField(required=False)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)
    last = serializers.IntegerField(required=False, min_value=1, max_value=10000)


class ChainReportOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    checked = serializers.IntegerField()
    chain = serializers.CharField(allow_null=True)
    first_bad_seq = serializers.IntegerField(allow_null=True)
    first_bad_id = serializers.IntegerField(allow_null=True)
    problem = serializers.CharField()


class JobEventOutput(serializers.Serializer):
    seq = serializers.IntegerField()
    kind = serializers.CharField()
    data = serializers.JSONField()  # type: ignore[assignment]
    created_at = serializers.DateTimeField()


class JobOutput(serializers.ModelSerializer):
    session = serializers.UUIDField(source="session_id")
    role = serializers.SerializerMethodField()
    role_version = serializers.SerializerMethodField()

    @extend_schema_field(OpenApiTypes.STR)
    def get_role(self, obj: Job) -> str:
        return registry.by_id(obj.role_id).slug

    @extend_schema_field(OpenApiTypes.INT)
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
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
        ]


class JobDetailOutput(JobOutput):
    events = JobEventOutput(many=True)

    class Meta(JobOutput.Meta):
        fields = [*JobOutput.Meta.fields, "events"]


class JobCreateInput(serializers.Serializer):
    request = serializers.CharField()


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
