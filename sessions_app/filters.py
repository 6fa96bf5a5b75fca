"""Filters of sessions and audit events, shared by the REST API and the dashboard pages."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import django_filters
from django import forms
from django.db.models import Q, QuerySet

from sessions_app.models import AgentSession, AuditEvent, AuditEventType, SessionStatus


class SessionFilter(django_filters.FilterSet):
    """Search and filters of the session list and the board."""

    q = django_filters.CharFilter(method="filter_text", label="Search")
    role = django_filters.CharFilter(method="filter_role", label="Current role")
    status = django_filters.ChoiceFilter(choices=SessionStatus.choices)
    owner = django_filters.CharFilter(field_name="owner__username", label="Owner")

    class Meta:
        model = AgentSession
        fields = ["q", "role", "status", "owner"]

    def filter_text(self, qs: QuerySet[AgentSession], name: str, value: str) -> Any:
        return qs.filter(
            Q(title__icontains=value) | Q(task__icontains=value) | Q(last_reason__icontains=value)
        )

    def filter_role(self, qs: QuerySet[AgentSession], name: str, value: str) -> Any:
        return qs.filter(Q(current_role__slug__iexact=value) | Q(current_role__name__iexact=value))


def to_utc(moment: datetime) -> datetime:
    """A moment in UTC: PostgreSQL refuses UTC offsets beyond 15:59, which Python accepts.
    Raises OverflowError for a moment UTC cannot hold."""
    return moment.astimezone(UTC) if moment.tzinfo is not None else moment


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    """An ISO 8601 moment compared in UTC (``to_utc``)."""

    def filter(self, qs: Any, value: Any) -> Any:
        if isinstance(value, datetime):
            try:
                value = to_utc(value)
            except OverflowError:
                return qs.none()  # no row was written at a moment UTC cannot hold
        return super().filter(qs, value)


_DATETIME = forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")


class AuditFilter(django_filters.FilterSet):
    """Filters of the audit log: the page, the list API and the export use the same names."""

    event_type = django_filters.ChoiceFilter(
        choices=AuditEventType.choices, empty_label="Any event"
    )
    session = django_filters.UUIDFilter(field_name="session_id")
    role = django_filters.CharFilter(field_name="role", lookup_expr="iexact", max_length=64)
    actor = django_filters.CharFilter(field_name="actor", max_length=150)
    since = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte", widget=_DATETIME)
    until = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt", widget=_DATETIME)

    class Meta:
        model = AuditEvent
        fields = ["event_type", "session", "role", "actor", "since", "until"]


def audit_order(params: Mapping[str, Any], *, newest_first: bool = True) -> list[str]:
    """The order of audit rows: by id. With a time filter, by (id, created_at): the same
    rows in the same order (ids are unique), but an order only the (id, created_at) index
    gives, so PostgreSQL reads the window off that index, checking the times inside it,
    instead of walking back row by row from the newest (it does not know that ids and
    times grow together, and a window a month back cost a third of a second at 1M rows)."""
    sign = "-" if newest_first else ""
    timed = any(params.get(name) for name in ("since", "until"))
    return [f"{sign}id", f"{sign}created_at"] if timed else [f"{sign}id"]
