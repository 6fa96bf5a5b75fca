"""Writes to a backlog: projects, epics and tasks, imported or proposed, and every status
change a task makes (``task_move``, over the task's status machine ``states.TASK``).

People accept or reject proposals, reprioritise and unblock; the scheduler
(``backlog_scheduler``) starts tasks and makes them follow their runs. Every change is
audited (the task's session's chain, or the global one before it has a session) and
published to the open kanbans after commit.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from acode import live
from acode.errors import AcodeError
from sessions_app.models import (
    AuditEventType,
    BacklogProject,
    BacklogTask,
    Epic,
    Repository,
    TaskPriority,
    TaskStatus,
)
from sessions_app.models.states import TASK, status_move
from sessions_app.services.audit import actor_name, audit_record
from sessions_app.services.backlog_document import (
    EpicSpec,
    document_tasks,
    fit_check,
)

BACKLOG_GROUP = "acode-backlog"
BACKLOG_EVENT = "backlog.changed"
# The longest reason a person gives (rejecting a proposal); the audit row keeps it whole.
REASON_MAX = 1000


def backlog_publish(project_id: int, task_id: int | None = None) -> None:
    """Tell every open kanban of the project that it changed, after commit."""
    message = {
        "type": BACKLOG_EVENT,
        "kind": BACKLOG_EVENT,
        "project": project_id,
        "task": task_id,
    }
    transaction.on_commit(lambda: live.send([(BACKLOG_GROUP, message)]), robust=True)


def _audit(task: BacklogTask, actor: str, result: str, **details: Any) -> None:
    audit_record(
        event_type=AuditEventType.BACKLOG_EVENT,
        actor=actor,
        session=task.session,
        target=f"task {task.project.slug}/{task.key}",
        result=result,
        details={"status": task.status, **details},
    )


def project_create(
    *,
    owner: User,
    slug: str,
    title: str,
    description: str = "",
    repository: Repository | None = None,
    **options: Any,
) -> BacklogProject:
    """A new board; ``options`` are the project's other fields (limits, branch, template)."""
    if BacklogProject.objects.filter(slug=slug).exists():
        raise AcodeError(
            "ACODE-API-409", f"A project named {slug!r} exists already.", {"field": "slug"}
        )
    project = BacklogProject.objects.create(
        owner=owner,
        slug=slug,
        title=title,
        description=description,
        repository=repository,
        **options,
    )
    backlog_publish(project.pk)
    return project


@transaction.atomic
def task_move(
    *,
    task: BacklogTask,
    to: str,
    actor: str,
    reason: str | None = None,
    only_from: tuple[str, ...] | None = None,
    **fields: Any,
) -> BacklogTask:
    """The one way a task changes status: refused (ACODE-BKL-001) unless ``states.TASK``
    allows it (and the task is in one of ``only_from``, when given: what a person's action
    applies to). ``reason`` replaces the task's (why it is blocked, the conflict); other
    ``fields`` are written with it (its run, its session, its merged commit)."""
    locked = (
        BacklogTask.objects.select_for_update(of=("self",))
        .select_related("project")
        .get(pk=task.pk)
    )
    if not TASK.allows(locked.status, to) or (only_from and locked.status not in only_from):
        raise AcodeError(
            "ACODE-BKL-001",
            f"A task in {locked.status} cannot move to {to}.",
            {
                "task": locked.key,
                "status": locked.status,
                "allowed": [s for s in TaskStatus.values if TASK.allows(locked.status, s)],
            },
        )
    before = locked.status
    if reason is not None:
        fields["reason"] = reason
    status_move(locked, to, **fields)
    _audit(locked, actor, to, previous=before, reason=locked.reason[:REASON_MAX])
    backlog_publish(locked.project_id, locked.pk)
    return locked


def task_accept(*, task: BacklogTask, user: User | None = None, actor: str = "") -> BacklogTask:
    """A person accepts a proposed task: it joins the backlog."""
    return task_move(
        task=task,
        to=TaskStatus.BACKLOG,
        actor=actor_name(user, actor),
        reason="",
        only_from=(TaskStatus.PROPOSED,),
    )


@transaction.atomic
def task_reject(
    *, task: BacklogTask, reason: str, user: User | None = None, actor: str = ""
) -> BacklogTask:
    """A person rejects a proposed task, saying why: it is closed, never done, and the
    Product Manager's next completeness check is told so. Refused while a task that is not
    rejected depends on it (ACODE-BKL-008: reject those first); a task that is not proposed
    is the status machine's refusal (ACODE-BKL-001)."""
    reason = reason.strip()
    if not 1 <= len(reason) <= REASON_MAX:
        raise AcodeError(
            "ACODE-API-400",
            f"A rejection needs a reason of 1 to {REASON_MAX} characters.",
            {"field": "reason"},
        )
    # The project's lock orders this with an import that could add a dependent meanwhile.
    BacklogProject.objects.select_for_update().filter(pk=task.project_id).first()
    status = BacklogTask.objects.filter(pk=task.pk).values_list("status", flat=True).first()
    if status == TaskStatus.PROPOSED:
        _dependents_check(task)
    return task_move(
        task=task,
        to=TaskStatus.REJECTED,
        actor=actor_name(user, actor),
        reason=reason,
        only_from=(TaskStatus.PROPOSED,),
    )


def _dependents_check(task: BacklogTask) -> None:
    """Refuse (ACODE-BKL-008) rejecting a task others still depend on."""
    keys = sorted(task.dependents.exclude(status=TaskStatus.REJECTED).values_list("key", flat=True))
    if keys:
        raise AcodeError(
            "ACODE-BKL-008",
            f"Task {task.key} cannot be rejected: {', '.join(keys)} depend"
            f"{'s' if len(keys) == 1 else ''} on it (reject them first).",
            {"task": task.key, "dependents": keys},
        )


def task_unblock(
    *, task: BacklogTask, user: User | None = None, actor: str = "", note: str = ""
) -> BacklogTask:
    """A person sends a blocked task (or one whose merge conflicted) back to the backlog:
    the scheduler starts it again, with a fresh count of blocked runs."""
    if task.status == TaskStatus.IN_PROGRESS and not task.conflict:
        raise AcodeError(
            "ACODE-BKL-001",
            "The task's run is still going: only a blocked task, or one whose merge "
            "conflicted, goes back to the backlog.",
            {"task": task.key, "status": task.status},
        )
    return task_move(
        task=task,
        to=TaskStatus.BACKLOG,
        actor=actor_name(user, actor),
        reason=note,
        # Blocked, or sent back by a merge conflict (in progress, its run over).
        only_from=(TaskStatus.BLOCKED, TaskStatus.IN_PROGRESS),
        blocked_runs=0,
        conflict=[],
    )


def task_wait(*, task: BacklogTask, waiting: str) -> bool:
    """Say on a ready task's card why the scheduler leaves it waiting ('': it is not). Not a
    status change nor anyone's decision, so not audited; the kanbans hear of a change only.
    Whether it changed."""
    changed = (
        BacklogTask.objects.filter(pk=task.pk, status=TaskStatus.BACKLOG)
        .exclude(waiting=waiting)
        .update(waiting=waiting)
    )
    if changed:
        backlog_publish(task.project_id, task.pk)
    return bool(changed)


@transaction.atomic
def task_reprioritise(
    *, task: BacklogTask, priority: str, user: User | None = None, actor: str = ""
) -> BacklogTask:
    """Change a task's priority (the scheduler starts the highest first)."""
    if priority not in TaskPriority.values:
        raise AcodeError(
            "ACODE-API-400",
            f"Unknown priority {priority!r}.",
            {"field": "priority", "allowed": list(TaskPriority.values)},
        )
    locked = (
        BacklogTask.objects.select_for_update(of=("self",))
        .select_related("project")
        .get(pk=task.pk)
    )
    if locked.status in (TaskStatus.DONE, TaskStatus.REJECTED):
        raise AcodeError(
            "ACODE-BKL-001", f"A {locked.status} task keeps its priority.", {"task": locked.key}
        )
    before = locked.priority
    locked.priority = priority
    locked.save(update_fields=["priority", "updated_at"])
    _audit(locked, actor_name(user, actor), "reprioritised", previous=before, priority=priority)
    backlog_publish(locked.project_id, locked.pk)
    return locked


# -- documents: YAML imports and the Product Manager's proposals ----------------------------


@transaction.atomic
def backlog_import(
    *,
    project: BacklogProject,
    document: Any,
    actor: str,
    proposed_by: str = "",
) -> list[BacklogTask]:
    """Add a document's epics and tasks to the project, all or nothing: its form
    (ACODE-BKL-002), then how it fits the project (ACODE-BKL-004: each task's key is new in
    the project, its dependencies name tasks of the document or the project, and they form
    no cycle). A proposal (``proposed_by``: the Product Manager) waits for a person unless
    the project lets proposals through."""
    epic_specs, specs = document_tasks(document)
    project = BacklogProject.objects.select_for_update().get(pk=project.pk)
    fit_check(specs, project.tasks.values_list("key", flat=True))
    epics = _epics_create(project, epic_specs, actor)
    status = TaskStatus.PROPOSED
    if not proposed_by or project.auto_accept_proposals:
        status = TaskStatus.BACKLOG
    created = {
        spec.key: BacklogTask.objects.create(
            project=project,
            epic=epics.get(spec.epic),
            key=spec.key,
            title=spec.title,
            description=spec.description,
            acceptance_criteria=spec.acceptance_criteria,
            priority=spec.priority,
            template=spec.template,
            status=status,
            proposed_by=proposed_by,
            created_by=actor,
        )
        for spec in specs
    }
    known = {t.key: t for t in project.tasks.exclude(key__in=list(created))}
    for spec in specs:
        created[spec.key].depends_on.set([created.get(d) or known[d] for d in spec.depends_on])
    for task in created.values():
        _audit(task, actor, "created", proposed_by=proposed_by)
    backlog_publish(project.pk)
    return list(created.values())


def _epics_create(project: BacklogProject, specs: list[EpicSpec], actor: str) -> dict[str, Epic]:
    """The document's epics: those the project has already are reused by key."""
    epics: dict[str, Epic] = {}
    for spec in specs:
        found = project.epics.filter(key=spec.key).first()
        epics[spec.key] = found or Epic.objects.create(
            project=project,
            key=spec.key,
            title=spec.title,
            description=spec.description,
            created_by=actor,
        )
    return epics
