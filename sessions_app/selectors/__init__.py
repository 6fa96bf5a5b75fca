"""Reads about sessions: time in role and time waiting for a person (computed here and
nowhere else) and usage; what sessions delivered; runs
with their stages, questions and approvals, what they used and what happened in them.

The pages and the API read through here too (they import no model):
``lookups`` reads a session again by id (a view finds one, and whether the user may,
with ``permissions.session_for``), ``sessions`` reads a session's history, changes and jobs,
``board`` the board's columns, ``runs`` what lists and the run panel show of runs and
workflow templates.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.db.models import F, Prefetch, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from sessions_app.models import (
    AgentSession,
    ApprovalStatus,
    AuditEvent,
    AuditEventType,
    DeliveredCommit,
    Job,
    JobEvent,
    RoleTransition,
    Run,
    RunApproval,
    RunQuestion,
    RunStage,
    RunStatus,
    StagePurpose,
)

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


# -- runs ---------------------------------------------------------------------------------

RUN_EVENTS_PAGE = 200  # events per answer of the run events endpoint; poll again for more


def runs_with_stages(runs: QuerySet[Run]) -> QuerySet[Run]:
    """Runs with their stages in order (a list shows each one's current stage)."""
    return runs.select_related("session", "template").prefetch_related(
        Prefetch("stages", queryset=RunStage.objects.order_by("seq"))
    )


def runs_with_details(runs: QuerySet[Run]) -> QuerySet[Run]:
    """Runs with everything a run's detail shows, in a fixed number of queries."""
    return runs_with_stages(runs).prefetch_related(
        Prefetch("commits", queryset=DeliveredCommit.objects.order_by("-created_at", "-id")),
        Prefetch(
            "questions",
            queryset=RunQuestion.objects.select_related("answered_by").order_by("asked_at", "id"),
        ),
        Prefetch(
            "approvals",
            queryset=RunApproval.objects.select_related("decided_by").order_by(
                "requested_at", "id"
            ),
        ),
    )


def run_current_stage(run: Run) -> RunStage | None:
    """The run's latest stage (from the prefetched stages when there are)."""
    stages = list(run.stages.all())
    return stages[-1] if stages else None


def run_open_question(run: Run) -> RunQuestion | None:
    """The question an answer would answer now (the one ``run_answer`` picks), if the run
    waits for one."""
    if run.status not in (RunStatus.AWAITING_INPUT, RunStatus.BLOCKED):
        return None
    open_ = [q for q in run.questions.all() if q.answered_at is None]
    return max(open_, key=lambda q: (q.asked_at, q.id)) if open_ else None


def run_pending_approval(run: Run) -> RunApproval | None:
    """The approval request waiting for a decision, if the run is at its gate."""
    if run.status != RunStatus.AWAITING_APPROVAL:
        return None
    pending = [a for a in run.approvals.all() if a.status == ApprovalStatus.PENDING]
    return max(pending, key=lambda a: a.id) if pending else None


def run_commit(run: Run) -> DeliveredCommit | None:
    """The commit the run delivered (its newest, from the prefetched ones when there are)."""
    commits = list(run.commits.all())
    return max(commits, key=lambda c: (c.created_at, c.id)) if commits else None


def session_commits(session: AgentSession) -> QuerySet[DeliveredCommit]:
    """What the session delivered on its branch, newest first."""
    return DeliveredCommit.objects.filter(session=session).order_by("-created_at", "-id")


def run_usage(run: Run, *, now: datetime | None = None) -> dict[str, int]:
    """What the run's jobs used so far, and its wall time (to its end, if it ended)."""
    used = Job.objects.filter(run_stage__run=run).aggregate(
        calls=Sum("llm_calls"), tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out")
    )
    end = run.finished_at or now or timezone.now()
    return {
        "used_llm_calls": used["calls"] or 0,
        "used_tokens": (used["tokens_in"] or 0) + (used["tokens_out"] or 0),
        "elapsed_seconds": max(0, int((end - run.created_at).total_seconds())),
    }


def run_events(run: Run, *, after: int = 0, limit: int = RUN_EVENTS_PAGE) -> dict[str, Any]:
    """What happened in a run, in time order: its audit rows (stages, pauses, decisions)
    merged with the events of its jobs, numbered from 1.

    ``after`` is the last number a client has seen; the answer's ``next`` is the number to
    pass next time. Only the (time, id) of earlier events is read, so polling a long run
    stays cheap.
    """
    audit = AuditEvent.objects.filter(
        session_id=run.session_id,
        target=f"run {run.pk}",
        event_type__in=[AuditEventType.RUN_EVENT, AuditEventType.RUN_DECISION],
    )
    job_events = JobEvent.objects.filter(job__run_stage__run=run)
    # Ties in time: a stage's audit row comes after the job it queued (it is written last).
    keys = sorted(
        [(at, 1, pk) for pk, at in audit.values_list("id", "created_at")]
        + [(at, 0, pk) for pk, at in job_events.values_list("id", "created_at")]
    )
    page = keys[after : after + limit]
    audit_rows = {
        row.pk: row for row in audit.filter(pk__in=[pk for _, source, pk in page if source == 1])
    }
    event_rows = {
        row.pk: row
        for row in job_events.filter(
            pk__in=[pk for _, source, pk in page if source == 0]
        ).select_related("job__run_stage")
    }
    events = []
    for n, (at, source, pk) in enumerate(page, start=after + 1):
        if source == 1:
            row = audit_rows[pk]
            kind = "run" if row.event_type == AuditEventType.RUN_EVENT else "decision"
            data = {
                "result": row.result,
                "actor": row.actor,
                "role": row.role,
                "details": row.details,
            }
        else:
            event = event_rows[pk]
            stage = event.job.run_stage
            kind = f"job.{event.kind}"
            data = {
                **event.data,
                "job": str(event.job_id),
                "stage": stage.seq if stage is not None else None,
                "seq": event.seq,
            }
        events.append({"n": n, "at": at, "kind": kind, "data": data})
    return {"events": events, "next": after + len(page)}
