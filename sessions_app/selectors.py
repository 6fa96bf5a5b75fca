"""Reads about sessions: visibility, filters, time in role."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.utils import timezone

from sessions_app.models import AgentSession, AuditEvent, RoleTransition

# The spec's intended split of time across roles ("role usage distribution").
TARGET_SHARES: dict[str, tuple[float, float]] = {
    "planner": (0.15, 0.20),
    "coder": (0.60, 0.70),
    "reviewer": (0.10, 0.15),
}


def can_view_all(user: Any) -> bool:
    return bool(user.is_superuser or user.has_perm("sessions_app.view_all_sessions"))


def can_act_on_all(user: Any) -> bool:
    return bool(user.is_superuser or user.has_perm("sessions_app.act_on_all_sessions"))


def sessions_visible_to(user: User) -> QuerySet[AgentSession]:
    qs = AgentSession.objects.select_related("current_role", "owner")
    return qs if can_view_all(user) else qs.filter(owner=user)


def session_can_act(user: User, session: AgentSession) -> bool:
    return session.owner_id == user.pk or can_act_on_all(user)


def session_list(
    *,
    user: User,
    role: str | None = None,
    status: str | None = None,
    owner: str | None = None,
    text: str | None = None,
) -> QuerySet[AgentSession]:
    """Sessions the user may see, filtered by current role, status, owner and free text."""
    qs = sessions_visible_to(user)
    if role:
        qs = qs.filter(Q(current_role__slug__iexact=role) | Q(current_role__name__iexact=role))
    if status:
        qs = qs.filter(status=status)
    if owner:
        qs = qs.filter(owner__username=owner)
    if text:
        qs = qs.filter(
            Q(title__icontains=text) | Q(task__icontains=text) | Q(last_reason__icontains=text)
        )
    return qs


def audit_visible_to(user: User) -> QuerySet[AuditEvent]:
    if can_view_all(user) or user.has_perm("sessions_app.view_auditevent"):
        return AuditEvent.objects.all()
    return AuditEvent.objects.filter(session__owner=user)


def time_in_roles(
    transitions: Iterable[tuple[Any, str, datetime]], *, now: datetime | None = None
) -> dict[str, float]:
    """Seconds spent in each role, from (session, to-role slug, time) rows in order."""
    now = now or timezone.now()
    totals: dict[str, float] = defaultdict(float)
    previous: tuple[Any, str, datetime] | None = None
    for row in transitions:
        if previous is not None and previous[0] == row[0]:
            totals[previous[1]] += (row[2] - previous[2]).total_seconds()
        elif previous is not None:
            totals[previous[1]] += (now - previous[2]).total_seconds()
        previous = row
    if previous is not None:
        totals[previous[1]] += (now - previous[2]).total_seconds()
    return dict(totals)


def usage(sessions: QuerySet[AgentSession] | None = None) -> dict[str, Any]:
    """Time-in-role distribution for some sessions (all by default), with the spec targets."""
    qs = RoleTransition.objects.order_by("session_id", "seq")
    if sessions is not None:
        qs = qs.filter(session__in=sessions)
    seconds = time_in_roles(qs.values_list("session_id", "to_role__slug", "created_at").iterator())
    total = sum(seconds.values())
    roles = []
    for slug, value in sorted(seconds.items(), key=lambda kv: -kv[1]):
        share = value / total if total else 0.0
        low_high = TARGET_SHARES.get(slug)
        roles.append(
            {
                "role": slug,
                "seconds": round(value, 3),
                "share": round(share, 4),
                "target": list(low_high) if low_high else None,
                "within_target": (low_high[0] <= share <= low_high[1]) if low_high else None,
            }
        )
    return {"total_seconds": round(total, 3), "roles": roles}
