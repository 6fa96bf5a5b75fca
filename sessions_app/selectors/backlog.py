"""Reads of backlogs: a project's tasks, and its kanban (columns by status, each card with
its run's stage and risk; rejected proposals apart, under the columns). Who may see and
act: ``services.backlog_access``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Prefetch, QuerySet

from sessions_app.models import BacklogProject, BacklogTask, Job, PmWork, RunStage, TaskStatus

COLUMNS = (
    TaskStatus.PROPOSED,
    TaskStatus.BACKLOG,
    TaskStatus.IN_PROGRESS,
    TaskStatus.REVIEW,
    TaskStatus.DONE,
    TaskStatus.BLOCKED,
)


def tasks_of(project: BacklogProject, status: list[str] | None = None) -> QuerySet[BacklogTask]:
    qs = (
        BacklogTask.objects.filter(project=project)
        .select_related("project", "epic", "run", "session")
        .prefetch_related(Prefetch("depends_on", queryset=BacklogTask.objects.only("id", "key")))
        .order_by("id")
    )
    return qs.filter(status__in=status) if status else qs


@dataclass
class Card:
    """A task as the kanban shows it: with its run's stage and risk."""

    task: BacklogTask
    stage: str = ""
    risk: str = ""
    depends_on: list[str] = field(default_factory=list)


@dataclass
class ProductManager:
    """What the kanban shows of the Product Manager: its latest job (a plan or a
    completeness check), how it went, and how many of its proposals wait for a person."""

    kind: str = ""  # plan | check ("": it never worked on this project)
    label: str = ""
    status: str = ""
    said: str = ""  # its answer, or why it failed
    session_id: Any = None
    waiting: int = 0


@dataclass
class Board:
    project: BacklogProject
    columns: list[tuple[str, str, list[Card]]]
    may_act: bool
    pm: ProductManager = field(default_factory=ProductManager)
    # Proposals a person rejected: closed, never done, so in no column.
    rejected: list[Card] = field(default_factory=list)


def product_manager_of(project: BacklogProject, waiting: int) -> ProductManager:
    job = Job.objects.filter(pk=project.pm_job_id).first() if project.pm_job_id else None
    if job is None:
        return ProductManager(waiting=waiting)
    said = job.result or " ".join(p for p in (job.error_code, job.error_message) if p)
    return ProductManager(
        kind=project.pm_job_kind,
        label=dict(PmWork.choices).get(project.pm_job_kind, project.pm_job_kind).split(" (")[0],
        status=job.status,
        said=said[:600],
        session_id=project.pm_session_id,
        waiting=waiting,
    )


def board_of(project: BacklogProject, *, may_act: bool) -> Board:
    """The project's tasks by column; each card with its run's current stage and risk."""
    tasks = list(tasks_of(project))
    run_ids = [t.run_id for t in tasks if t.run_id]
    stages: dict[Any, str] = {}
    for stage in RunStage.objects.filter(run_id__in=run_ids).order_by("run_id", "seq"):
        stages[stage.run_id] = f"{stage.purpose} ({stage.status})"
    cards: dict[str, list[Card]] = {c: [] for c in (*COLUMNS, TaskStatus.REJECTED)}
    for task in tasks:
        cards[task.status].append(
            Card(
                task=task,
                stage=stages.get(task.run_id, ""),
                risk=task.run.effective_tier if task.run else "",
                depends_on=[d.key for d in task.depends_on.all()],
            )
        )
    labels = dict(TaskStatus.choices)
    columns = [(str(c), labels[c].split(" (")[0], cards[c]) for c in COLUMNS]
    pm = product_manager_of(project, len(cards[TaskStatus.PROPOSED]))
    return Board(
        project=project,
        columns=columns,
        may_act=may_act,
        pm=pm,
        rejected=cards[TaskStatus.REJECTED],
    )
