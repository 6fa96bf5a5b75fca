"""Time in role and time waiting for a person, computed here and nowhere else: the
usage API, the usage page, the session page and the run panel all read them from here.

A session's time in a role runs from the transition into it to the next one (or now);
time it waited for a person (a run's open question or approval gate) is not time in its
role."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.db.models import F, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from sessions_app.models import AgentSession, RoleTransition, RunQuestion, RunStage, StagePurpose

# The spec's intended split of time across roles ("role usage distribution").
TARGET_SHARES: dict[str, tuple[float, float]] = {
    "planner": (0.15, 0.20),
    "coder": (0.60, 0.70),
    "reviewer": (0.10, 0.15),
}


Interval = tuple[datetime, datetime | None]  # an end of None: still going on


def waiting_intervals(
    sessions: QuerySet[AgentSession] | Sequence[Any] | None = None,
) -> dict[Any, list[Interval]]:
    """When sessions waited for a person, per session id: each question of a run from when
    it was asked to its answer (or the run's end), each approval gate from when it opened
    to the decision (or the run's end). Read in one query."""
    questions = RunQuestion.objects.annotate(
        sid=F("run__session_id"),
        start=F("asked_at"),
        end=Coalesce("answered_at", "run__finished_at"),
    )
    gates = RunStage.objects.filter(purpose=StagePurpose.APPROVAL).annotate(
        sid=F("run__session_id"),
        start=F("started_at"),
        end=Coalesce("finished_at", "run__finished_at"),
    )
    if sessions is not None:
        questions = questions.filter(run__session__in=sessions)
        gates = gates.filter(run__session__in=sessions)
    # No ordering in the parts of a UNION (SQLite refuses it; the models have a default).
    rows = (
        questions.order_by()
        .values_list("sid", "start", "end")
        .union(gates.order_by().values_list("sid", "start", "end"), all=True)
    )
    out: dict[Any, list[Interval]] = defaultdict(list)
    for sid, start, end in rows:
        out[sid].append((start, end))
    return {sid: _merged(spans) for sid, spans in out.items()}


def _merged(spans: list[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for start, end in sorted(spans, key=lambda span: span[0]):
        if merged and (merged[-1][1] is None or start <= merged[-1][1]):
            last_end = merged[-1][1]
            merged[-1] = (
                merged[-1][0],
                None if end is None or last_end is None else max(end, last_end),
            )
        else:
            merged.append((start, end))
    return merged


def overlap_seconds(
    start: datetime, end: datetime, spans: Iterable[Interval], now: datetime
) -> float:
    """Seconds of [start, end) that fall in the waiting ``spans``."""
    total = 0.0
    for span_start, span_end in spans:
        lo, hi = max(start, span_start), min(end, span_end or now)
        if hi > lo:
            total += (hi - lo).total_seconds()
    return total


def time_in_roles(
    transitions: Iterable[tuple[Any, str, datetime]],
    *,
    now: datetime | None = None,
    waiting: dict[Any, list[Interval]] | None = None,
) -> dict[str, float]:
    """Seconds spent in each role, from (session, to-role slug, time) rows in order; time a
    session waited for a person (``waiting_intervals``) is not time in its role."""
    now = now or timezone.now()
    waits = waiting or {}
    totals: dict[str, float] = defaultdict(float)
    previous: tuple[Any, str, datetime] | None = None
    for row in [*transitions, None]:
        if previous is not None:
            end = row[2] if row is not None and row[0] == previous[0] else now
            spent = (end - previous[2]).total_seconds()
            spans = waits.get(previous[0])
            if spans:
                spent -= overlap_seconds(previous[2], end, spans, now)
            totals[previous[1]] += spent
        previous = row
    return dict(totals)


def waiting_seconds(waiting: dict[Any, list[Interval]], *, now: datetime | None = None) -> float:
    """All the time the sessions spent waiting for a person."""
    now = now or timezone.now()
    return sum(
        ((end or now) - start).total_seconds() for spans in waiting.values() for start, end in spans
    )


def _distribution(
    seconds: dict[str, float], *, targets: bool, waiting: float = 0.0
) -> dict[str, Any]:
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
    return {"total_seconds": round(total, 3), "waiting_seconds": round(waiting, 3), "roles": roles}


def usage(sessions: QuerySet[AgentSession] | None = None) -> dict[str, Any]:
    """Time-in-role distribution for some sessions (all by default), with the spec targets."""
    qs = RoleTransition.objects.order_by("session_id", "seq")
    if sessions is not None:
        qs = qs.filter(session__in=sessions)
    rows = qs.values_list("session_id", "to_role__slug", "created_at").iterator()
    waiting = waiting_intervals(sessions)
    return _distribution(
        time_in_roles(rows, waiting=waiting), targets=True, waiting=waiting_seconds(waiting)
    )


def session_usage(session: AgentSession) -> dict[str, Any]:
    """One session's time-in-role distribution (no targets: one session is no sample)."""
    rows = session.transitions.order_by("seq").values_list(
        "session_id", "to_role__slug", "created_at"
    )
    waiting = waiting_intervals([session.pk])
    return _distribution(
        time_in_roles(rows, waiting=waiting), targets=False, waiting=waiting_seconds(waiting)
    )
