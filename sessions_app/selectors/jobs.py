"""What the jobs API and the session page's jobs panel read of a session's jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from sessions_app.models import AgentSession, Job, JobEvent, JobEventKind

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
