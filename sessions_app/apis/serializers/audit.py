"""Output shapes of usage and the audit log, and the audit filters."""

from __future__ import annotations

from rest_framework import serializers

from acode.inputs import Query, Text
from sessions_app.models import (
    AuditEvent,
    AuditEventType,
)


class RoleShareOutput(serializers.Serializer):
    role = serializers.CharField()
    seconds = serializers.FloatField()
    share = serializers.FloatField()
    target = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    within_target = serializers.BooleanField(allow_null=True)


class UsageOutput(serializers.Serializer):
    total_seconds = serializers.FloatField(help_text="Time in roles, waiting not counted.")
    waiting_seconds = serializers.FloatField(
        help_text="Time runs waited for a person (an answer, an approval): in no role's share."
    )
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


class AuditPageOutput(serializers.Serializer):
    next = serializers.URLField(allow_null=True, help_text="The next (older) page")
    previous = serializers.URLField(allow_null=True)
    results = AuditEventOutput(many=True)


class AuditFilterInput(Query):
    """The audit filters (``sessions_app.filters.AuditFilter`` applies them; a moment UTC
    cannot hold matches nothing)."""

    event_type = serializers.ChoiceField(choices=AuditEventType.choices, required=False)
    session = serializers.UUIDField(required=False)
    role = Text(max_length=64, required=False, help_text="Role slug, any case")
    actor = Text(max_length=150, required=False)
    since = serializers.DateTimeField(required=False, help_text="From this moment on")
    until = serializers.DateTimeField(required=False, help_text="Before this moment")
    last = serializers.IntegerField(
        required=False, min_value=1, max_value=10000, help_text="Only the newest N events"
    )


class AuditExportQuery(AuditFilterInput):
    format = serializers.ChoiceField(choices=["jsonl", "csv"])


class AuditPageQuery(AuditFilterInput):
    cursor = serializers.RegexField(
        r"^[A-Za-z0-9+/=_-]+$",
        max_length=200,
        required=False,
        help_text="From a page's next or previous link",
    )
    page_size = serializers.IntegerField(
        min_value=1, max_value=1000, required=False, help_text="Events per page (default 100)"
    )


class ChainReportOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    checked = serializers.IntegerField()
    chain = serializers.CharField(allow_null=True)
    first_bad_seq = serializers.IntegerField(allow_null=True)
    first_bad_id = serializers.IntegerField(allow_null=True)
    problem = serializers.CharField()
