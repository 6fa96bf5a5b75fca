"""Reads about sessions: time in role (computed here and nowhere else) and usage."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from sessions_app.models import AgentSession, RoleTransition

# The spec's intended split of time across roles ("role usage distribution").
TARGET_SHARES: dict[str, tuple[float, float]] = {
    "planner": (0.15, 0.20),
    "coder": (0.60, 0.70),
    "reviewer": (0.10, 0.15),
}


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


def _distribution(seconds: dict[str, float], *, targets: bool) -> dict[str, Any]:
    total = sum(seconds.values())
    roles = []
    for slug, value in sorted(seconds.items(), key=lambda kv: -kv[1]):
        share = value / total if total else 0.0
        low_high = TARGET_SHARES.get(slug) if targets else None
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


def usage(sessions: QuerySet[AgentSession] | None = None) -> dict[str, Any]:
    """Time-in-role distribution for some sessions (all by default), with the spec targets."""
    qs = RoleTransition.objects.order_by("session_id", "seq")
    if sessions is not None:
        qs = qs.filter(session__in=sessions)
    rows = qs.values_list("session_id", "to_role__slug", "created_at").iterator()
    return _distribution(time_in_roles(rows), targets=True)


def session_time_in_roles(session: AgentSession) -> dict[str, float]:
    """Seconds the session has spent in each role so far."""
    rows = session.transitions.order_by("seq").values_list(
        "session_id", "to_role__slug", "created_at"
    )
    return time_in_roles(rows)


def session_usage(session: AgentSession) -> dict[str, Any]:
    """One session's time-in-role distribution (no targets: one session is no sample)."""
    return _distribution(session_time_in_roles(session), targets=False)
