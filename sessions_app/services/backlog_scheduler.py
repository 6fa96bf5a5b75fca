"""The scheduler: backlog tasks become runs while capacity is free, and tasks follow them.

``backlog_schedule`` (Celery beat, every ``ACODE_BACKLOG_TICK_SECONDS``) first makes every
task follow its run (``tasks_follow_runs``) and starts the Product Manager's completeness
check of every project just done (``backlog_pm.completeness_checks``), then, per project,
starts the highest-priority ready task (backlog, every dependency done) while the project
runs fewer than its ``max_concurrent_runs``, skipping a task whose run's first stage would
join a worker queue that already holds ``ACODE_BACKLOG_QUEUE_DEPTH`` jobs no worker has
taken (counted in the database, so every host's; a soft limit, as two projects scheduling
at the same moment may each add one). A ready task left waiting says why on its card
(``task_wait``). Each start is a run in a session and workspace of its own
(``session_create`` then ``run_start``, as the project's owner), its request carrying the
task's description and acceptance criteria, which every stage (the Reviewer's included)
is given.

A task is never started twice: the project's row is locked while its capacity is counted,
and the start claims the task with a conditional UPDATE (status still backlog, its
attempt counter unchanged) in the transaction that creates the run; a second scheduler
racing for it updates no row and moves on.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Case, Count, F, IntegerField, Q, Value, When

from acode.errors import AcodeError
from roles.registry import registry
from sessions_app.models import (
    PRIORITY_RANK,
    BacklogProject,
    BacklogTask,
    RunStatus,
    TaskStatus,
)
from sessions_app.selectors.jobs import jobs_queued_on
from sessions_app.services.backlog import task_move, task_wait
from sessions_app.services.backlog_integration import SCHEDULER, task_integrate
from sessions_app.services.backlog_pm import completeness_checks, pm_jobs_follow
from sessions_app.services.runs import run_start, template_chosen
from sessions_app.services.sessions import session_create

logger = logging.getLogger(__name__)

RUN_BLOCKED = (RunStatus.BLOCKED, RunStatus.FAILED, RunStatus.REJECTED, RunStatus.CANCELLED)
BUSY = (TaskStatus.IN_PROGRESS, TaskStatus.REVIEW)


def task_request(task: BacklogTask) -> str:
    """What the task's run is asked: its title, description and acceptance criteria (the
    Reviewer checks them), and why an earlier run of it did not finish."""
    parts = [f"Task {task.key}: {task.title}"]
    if task.description:
        parts.append(task.description)
    if task.acceptance_criteria:
        parts.append(
            "Acceptance criteria (the review checks each):\n"
            + "\n".join(f"- {c}" for c in task.acceptance_criteria)
        )
    if task.reason:
        parts.append(f"An earlier run of this task did not finish: {task.reason}")
    return "\n\n".join(parts)


def ready_tasks(project: BacklogProject) -> list[BacklogTask]:
    """The project's tasks the scheduler may start, highest priority first (then oldest)."""
    rank = Case(
        *(When(priority=p, then=Value(r)) for p, r in PRIORITY_RANK.items()),
        output_field=IntegerField(),
    )
    return list(
        BacklogTask.objects.filter(project=project, status=TaskStatus.BACKLOG)
        .annotate(
            open_deps=Count("depends_on", filter=~Q(depends_on__status=TaskStatus.DONE)),
            rank=rank,
        )
        .filter(open_deps=0)
        .order_by("rank", "id")
    )


def running_count(project: BacklogProject) -> int:
    """Tasks of the project whose run is going (a run at its approval gate holds no worker)."""
    return project.tasks.filter(
        status=TaskStatus.IN_PROGRESS, run__status__in=[RunStatus.RUNNING, RunStatus.AWAITING_INPUT]
    ).count()


def backlog_schedule() -> list[str]:
    """One tick: tasks follow their runs, then every project starts what it has room for;
    a project whose every task is now done gets its completeness check
    (``backlog_pm``). The keys of the tasks started."""
    tasks_follow_runs()
    pm_jobs_follow()
    completeness_checks()
    started: list[str] = []
    projects = BacklogProject.objects.filter(
        tasks__status=TaskStatus.BACKLOG, max_concurrent_runs__gt=0
    ).distinct()
    for project_id in projects.values_list("pk", flat=True):
        try:
            started += project_schedule(project_id)
        except Exception:  # one project's failure must not stop the others' scheduling
            logger.exception("backlog project %s: scheduling failed", project_id)
    return started


def project_schedule(project_id: Any) -> list[str]:
    """Start the project's ready tasks, highest priority first, while it has room and each
    one's first queue is not full, under its row lock; the others say why they wait."""
    started: list[str] = []
    with transaction.atomic():
        project = BacklogProject.objects.select_for_update().get(pk=project_id)
        room = project.max_concurrent_runs - running_count(project)
        for task in ready_tasks(project):
            waiting = _no_room(project) if room <= 0 else queue_full(project, task)
            if waiting:
                task_wait(task=task, waiting=waiting)
            elif task_start(project, task):
                started.append(task.key)
                room -= 1
    return started


def _no_room(project: BacklogProject) -> str:
    runs = project.max_concurrent_runs
    return f"Waiting: the project runs at most {runs} task{'s' if runs != 1 else ''} at once."


def run_template(project: BacklogProject, task: BacklogTask) -> str | None:
    """The template the task's next run names: the project's reassignment template after a
    blocked run, else the task's own; None for the one of the run's risk tier."""
    if task.blocked_runs and project.reassign_template:
        return project.reassign_template
    return task.template or None


def queue_full(project: BacklogProject, task: BacklogTask) -> str:
    """Why starting the task now would flood a worker pool ('' when it would not): the
    queue of its run's first stage holds ``ACODE_BACKLOG_QUEUE_DEPTH`` jobs or more that no
    worker has taken. The template is the one ``run_start`` would choose."""
    depth = int(settings.ACODE_BACKLOG_QUEUE_DEPTH)
    if depth <= 0:
        return ""
    try:
        template, _ = template_chosen(
            request=task_request(task), declared=project.run_risk,
            template=run_template(project, task),
        )  # fmt: skip
    except AcodeError:
        return ""  # the start is refused and blocks the task, with the reason
    first = template.stages.order_by("position").first()
    if first is None or first.role_id is None:
        return ""
    queue = registry.by_id(first.role_id).spec.queue
    queued = jobs_queued_on(queue)
    if queued < depth:
        return ""
    taken = f"jobs no worker has taken: {queued}; the limit is {depth}"
    return f"Waiting: queue {queue} is full ({taken})."


def task_start(project: BacklogProject, task: BacklogTask) -> bool:
    """Claim the task and start its run; False when another scheduler claimed it first.
    A start the server refuses (no template, a workspace it cannot make) blocks the task
    with the reason; an unreachable broker leaves it in the backlog for the next tick."""
    try:
        with transaction.atomic():
            # The project's row first (a no-op under project_schedule's lock): every writer
            # locks project then task, so none waits on another in the opposite order.
            BacklogProject.objects.select_for_update().filter(pk=project.pk).first()
            claimed = BacklogTask.objects.filter(
                pk=task.pk, status=TaskStatus.BACKLOG, attempts=task.attempts
            ).update(attempts=F("attempts") + 1)
            if not claimed:
                return False
            session = session_create(
                owner=project.owner,
                title=f"{project.slug}/{task.key}: {task.title}"[:200],
                task=task.title,
                repository=project.repository.name if project.repository else None,
            )
            run = run_start(
                session=session, request=task_request(task), user=project.owner,
                actor=SCHEDULER, risk=project.run_risk, template=run_template(project, task),
            )  # fmt: skip
            task_move(task=task, to=TaskStatus.IN_PROGRESS, actor=SCHEDULER, run=run,
                      session=session, waiting="")  # fmt: skip
    except AcodeError as exc:
        if exc.code == "ACODE-API-503":
            logger.warning("backlog task %s not started (broker unreachable)", task.key)
            return False
        task_move(task=task, to=TaskStatus.BLOCKED, actor=SCHEDULER,
                  reason=f"Could not start its run: {exc.message} ({exc.code})")  # fmt: skip
        return False
    return True


def tasks_follow_runs() -> list[str]:
    """Move every busy task after its run: waiting for approval → review; succeeded →
    merged into the integration branch (done, or back to in progress on a conflict);
    blocked, failed, rejected or cancelled → back to the backlog to be run again (the
    reassignment, up to the project's ``max_task_attempts`` runs), then blocked with the
    run's reason. The keys of the tasks moved."""
    moved: list[str] = []
    busy = (
        BacklogTask.objects.filter(status__in=BUSY, run__isnull=False, conflict=[])
        .select_related("project", "run", "session")
        .order_by("id")
    )
    for task in busy:
        try:
            if _follow(task):
                moved.append(task.key)
        except Exception as exc:  # a merge that cannot be made must not stop every tick
            logger.exception("backlog task %s: following its run failed", task.key)
            with contextlib.suppress(AcodeError):  # it moved meanwhile: the next tick sees
                task_move(task=task, to=TaskStatus.BLOCKED, actor=SCHEDULER,
                          reason=f"Following its run failed: {exc}"[:2000])  # fmt: skip
                moved.append(task.key)
    return moved


def _follow(task: BacklogTask) -> bool:
    """Move one task after its run; False when its run is still going."""
    run = task.run
    assert run is not None
    if run.status == RunStatus.AWAITING_APPROVAL and task.status == TaskStatus.IN_PROGRESS:
        task_move(task=task, to=TaskStatus.REVIEW, actor=SCHEDULER,
                  reason="Its run waits for a person's approval.")  # fmt: skip
    elif run.status == RunStatus.SUCCEEDED:
        if task.status == TaskStatus.IN_PROGRESS:
            task = task_move(task=task, to=TaskStatus.REVIEW, actor=SCHEDULER, reason="")
        task_integrate(task)
    elif run.status in RUN_BLOCKED:
        _after_blocked_run(task)
    else:
        return False
    return True


def _after_blocked_run(task: BacklogTask) -> None:
    run = task.run
    assert run is not None
    said = f"Run {run.pk} ended {run.status}: {run.message or run.error_code or 'no reason given'}"
    blocked = task.blocked_runs + 1
    if blocked < task.project.max_task_attempts:
        task_move(task=task, to=TaskStatus.BACKLOG, actor=SCHEDULER,
                  reason=f"{said}. Reassigned: run {blocked + 1} of "
                  f"{task.project.max_task_attempts}.", blocked_runs=blocked)  # fmt: skip
        return
    task_move(task=task, to=TaskStatus.BLOCKED, actor=SCHEDULER, reason=said,
              blocked_runs=blocked)  # fmt: skip
