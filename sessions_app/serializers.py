"""Input and output shapes of the sessions API."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

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
from sessions_app.selectors import time_in_roles


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


class SessionOutput(serializers.ModelSerializer):
    current_role = RoleRefOutput()
    role_version = serializers.IntegerField(
        source="role_version.number", allow_null=True, default=None
    )
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

    def get_plan_progress(self, obj: AgentSession) -> dict[str, int]:
        done = sum(1 for s in obj.plan if s.get("status") in (StepStatus.DONE, StepStatus.SKIPPED))
        return {"done": done, "total": len(obj.plan)}


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
        max_length=100, required=False, allow_blank=True, allow_null=True
    )


class TransitionOutput(serializers.ModelSerializer):
    from_role = serializers.CharField(source="from_role.slug", allow_null=True, default=None)
    to_role = serializers.CharField(source="to_role.slug")
    role_version = serializers.IntegerField(
        source="role_version.number", allow_null=True, default=None
    )

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
    first_bad_seq = serializers.IntegerField(allow_null=True)
    first_bad_id = serializers.IntegerField(allow_null=True)
    problem = serializers.CharField()


def session_stats(session: AgentSession) -> dict[str, Any]:
    rows = session.transitions.order_by("seq").values_list(
        "session_id", "to_role__slug", "created_at"
    )
    seconds = time_in_roles(rows)
    total = sum(seconds.values())
    return {
        "total_seconds": round(total, 3),
        "roles": [
            {
                "role": slug,
                "seconds": round(value, 3),
                "share": round(value / total, 4) if total else 0.0,
                "target": None,
                "within_target": None,
            }
            for slug, value in sorted(seconds.items(), key=lambda kv: -kv[1])
        ],
    }


class JobEventOutput(serializers.Serializer):
    seq = serializers.IntegerField()
    kind = serializers.CharField()
    data = serializers.JSONField()  # type: ignore[assignment]
    created_at = serializers.DateTimeField()


class JobOutput(serializers.ModelSerializer):
    session = serializers.UUIDField(source="session_id")
    role = serializers.CharField(source="role.slug")
    role_version = serializers.IntegerField(
        source="role_version.number", allow_null=True, default=None
    )

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
