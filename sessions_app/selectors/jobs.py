"""What the jobs API and the session page's jobs panel read of a session's jobs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from sessions_app.models import (
    FINAL_JOB_STATUSES,
    AgentSession,
    Job,
    JobEvent,
    JobEventKind,
    JobStatus,
)

# (seq, kind, data, time) of one job event.
EventRow = tuple[int, str, dict[str, Any], datetime]


def session_jobs_listed(
    session: AgentSession, *, statuses: list[str] | None = None, limit: int
) -> QuerySet[Job]:
    """The session's newest jobs (only those in ``statuses``, when given), at most ``limit``."""
    jobs = session.jobs.order_by("-created_at")
    if statuses is not None:
        jobs = jobs.filter(status__in=statuses)
    return jobs[:limit]


def jobs_queued_on(queue: str) -> int:
    """Jobs waiting on a Celery queue that no worker has taken yet, counted in the database
    (every host's; by their role's queue now)."""
    return Job.objects.filter(status=JobStatus.QUEUED, role__queue=queue).count()


def job_events(job: Job, *, after: int = 0) -> QuerySet[JobEvent]:
    """The job's events after number ``after``, in order."""
    return job.events.filter(seq__gt=after).order_by("seq")


def session_jobs_shown(session_id: Any, limit: int) -> list[Job]:
    """The session's newest ``limit`` jobs, each with how many tool calls were denied
    (``denied_count``), in one query."""
    denied = (
        JobEvent.objects.filter(job=OuterRef("pk"), kind=JobEventKind.TOOL_DENIED)
        .order_by()
        .values("job")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return list(
        Job.objects.filter(session_id=session_id)
        .annotate(denied_count=Coalesce(Subquery(denied), 0))
        .order_by("-created_at")[:limit]
    )


def session_job(session_id: Any, job_id: Any) -> Job | None:
    """One job of the session (None: it has no such job)."""
    return Job.objects.filter(session_id=session_id, pk=job_id).first()


def job_denied_count(job: Job) -> int:
    """How many of the job's tool calls were denied (``session_jobs_shown`` annotates it)."""
    counted = getattr(job, "denied_count", None)
    if counted is not None:
        return int(counted)
    return job.events.filter(kind=JobEventKind.TOOL_DENIED).count()


def job_newest_events(job: Job, limit: int) -> list[EventRow]:
    """The job's newest ``limit`` events, oldest of them first."""
    rows = job.events.order_by("-seq").values_list("seq", "kind", "data", "created_at")
    return list(reversed(list(rows[:limit])))


# -- what a job waits on right now (issue 34: waiting is visible) ----------------------

# The events that start or end a wait on the model or a tool, newest first tells which.
_STEP_KINDS = (
    JobEventKind.LLM_REQUEST,
    JobEventKind.LLM_RESPONSE,
    JobEventKind.TOOL_CALL,
    JobEventKind.TOOL_RESULT,
    JobEventKind.TOOL_DENIED,
)


@dataclass(frozen=True)
class InFlight:
    """What an unfinished job waits on, since when, and the calls it made so far."""

    what: str  # model, tool, worker, broker, step (between calls, in the worker)
    label: str  # in words: "the model (endpoint coder-scripted)", "the tool create_file"
    since: datetime
    llm_calls: int
    tool_calls: int


def job_in_flight(job: Job) -> InFlight | None:
    """What ``job`` waits on now, read from its newest step event (None: it ended).

    A model request without its response waits on the model; a tool call without its
    result waits on the tool; a queued job waits on a worker (or on the broker, when the
    worker could not reach it)."""
    if job.status in FINAL_JOB_STATUSES:
        return None
    tool_calls = job.events.filter(kind=JobEventKind.TOOL_CALL).count()
    if job.status == JobStatus.QUEUED:
        if job.broker_wait_since is not None:
            return InFlight("broker", "the broker (Redis)", job.broker_wait_since, job.llm_calls,
                            tool_calls)  # fmt: skip
        return InFlight("worker", "a worker to take the job", job.created_at, job.llm_calls,
                        tool_calls)  # fmt: skip
    last = job.events.filter(kind__in=_STEP_KINDS).order_by("-seq").first()
    since = job.started_at or job.created_at
    if last is None:
        return InFlight("step", "the job to start its first step", since, job.llm_calls,
                        tool_calls)  # fmt: skip
    if last.kind == JobEventKind.LLM_REQUEST:
        endpoints = [str(e) for e in last.data.get("endpoints") or []]
        where = f" (endpoint {endpoints[0]})" if endpoints else ""
        return InFlight("model", f"the model{where}", last.created_at, job.llm_calls, tool_calls)
    if last.kind == JobEventKind.TOOL_CALL:
        name = str(last.data.get("name") or "a tool")
        return InFlight("tool", f"the tool {name}", last.created_at, job.llm_calls, tool_calls)
    return InFlight("step", "the job's next step", last.created_at, job.llm_calls, tool_calls)


def job_id_in_flight(job_id: Any) -> InFlight | None:
    """:func:`job_in_flight` of the job with this id (None: no such job, or it ended)."""
    job = Job.objects.filter(pk=job_id).first()
    return job_in_flight(job) if job is not None else None
