"""What the runs API, the run panel and the workflow API read: one run with its details,
lists of runs, a session's newest and earlier runs, workflow templates and risk signals."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db.models import Prefetch, QuerySet

from sessions_app.models import (
    AgentSession,
    RiskSignal,
    Run,
    WorkflowStage,
    WorkflowTemplate,
)
from sessions_app.selectors import runs_with_details, runs_with_stages

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
