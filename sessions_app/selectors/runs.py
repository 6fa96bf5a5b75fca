"""What the runs API, the run panel and the workflow API read: runs with their stages,
questions and approvals, what a run used and what happened in it; one run with its details,
lists of runs, a session's newest and earlier runs, workflow templates and risk signals."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db.models import Prefetch, QuerySet, Sum
from django.utils import timezone

from sessions_app.models import (
    AgentSession,
    ApprovalStatus,
    AuditEvent,
    AuditEventType,
    DeliveredCommit,
    Job,
    JobEvent,
    RiskSignal,
    Run,
    RunApproval,
    RunQuestion,
    RunStage,
    RunStatus,
    WorkflowStage,
    WorkflowTemplate,
)

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


# (id, request, status, created at) of a run listed under the panel's current one.
RunRow = tuple[uuid.UUID, str, str, datetime]


def run_detail(pk: Any) -> Run:
    """The run with everything its detail shows (``runs_with_details``)."""
    return runs_with_details(Run.objects.filter(pk=pk)).get()


def runs_listed(
    runs: QuerySet[Run], *, session: uuid.UUID | None = None, statuses: list[str] | None = None
) -> QuerySet[Run]:
    """``runs`` newest first, of one session and in ``statuses`` when given, with stages."""
    runs = runs.order_by("-created_at")
    if session is not None:
        runs = runs.filter(session_id=session)
    if statuses is not None:
        runs = runs.filter(status__in=statuses)
    return runs_with_stages(runs)


def session_newest_run(session: AgentSession) -> Run | None:
    """The session's newest run (the active one, if it has one), with its details."""
    run = runs_with_details(Run.objects.filter(session=session).order_by("-created_at")).first()
    if run is not None:
        run.session = session  # the caller's row: its permission checks need no second read
    return run


def session_earlier_runs(session: AgentSession, *, but: Any, limit: int) -> list[RunRow]:
    """The session's newest ``limit`` runs other than ``but``, newest first."""
    return list(
        Run.objects.filter(session=session)
        .exclude(pk=but)
        .order_by("-created_at")
        .values_list("id", "request", "status", "created_at")[:limit]
    )


def run_template_stages(run: Run) -> list[WorkflowStage]:
    """The stages of the run's workflow template, in order."""
    return list(run.template.stages.order_by("position"))


def workflow_templates() -> QuerySet[WorkflowTemplate]:
    """Workflow templates by name, with their stages in order."""
    stages = WorkflowStage.objects.select_related("role").order_by("position")
    return WorkflowTemplate.objects.prefetch_related(Prefetch("stages", queryset=stages)).order_by(
        "name"
    )


def workflow_template(slug: str) -> WorkflowTemplate | None:
    return workflow_templates().filter(slug=slug).first()


def risk_signals() -> QuerySet[RiskSignal]:
    return RiskSignal.objects.order_by("name")
