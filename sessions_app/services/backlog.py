"""Writes to a backlog: projects, epics and tasks, imported or proposed, and every status
change a task makes (``task_move``, over the one table ``TASK_MOVES``).

People accept proposals, reprioritise and unblock; the scheduler (``backlog_scheduler``)
starts tasks and makes them follow their runs. Every change is audited (the task's
session's chain, or the global one before it has a session) and published to the open
kanbans after commit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from acode import live
from acode.errors import AcodeError
from acode.yamldoc import YamlDocumentError, load_yaml_mapping
from sessions_app.models import (
    TASK_MOVES,
    AuditEventType,
    BacklogProject,
    BacklogTask,
    Epic,
    Repository,
    TaskPriority,
    TaskStatus,
)
from sessions_app.services.audit import actor_name, audit_record

BACKLOG_GROUP = "acode-backlog"
BACKLOG_EVENT = "backlog.changed"
MAX_TASKS_PER_DOCUMENT = 500
SLUG = re.compile(r"[-a-zA-Z0-9_]{1,64}")


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
    """The one way a task changes status: refused (ACODE-BKL-001) unless ``TASK_MOVES``
    allows it (and the task is in one of ``only_from``, when given: what a person's action
    applies to). ``reason`` replaces the task's (why it is blocked, the conflict); other
    ``fields`` are written with it (its run, its session, its merged commit)."""
    locked = (
        BacklogTask.objects.select_for_update(of=("self",))
        .select_related("project")
        .get(pk=task.pk)
    )
    if to not in TASK_MOVES[locked.status] or (only_from and locked.status not in only_from):
        raise AcodeError(
            "ACODE-BKL-001",
            f"A task in {locked.status} cannot move to {to}.",
            {
                "task": locked.key,
                "status": locked.status,
                "allowed": list(TASK_MOVES[locked.status]),
            },
        )
    before = locked.status
    locked.status = to
    if reason is not None:
        locked.reason = reason
    for name, value in fields.items():
        setattr(locked, name, value)
    locked.save()
    _audit(locked, actor, to, previous=before, reason=locked.reason[:500])
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
    if locked.status == TaskStatus.DONE:
        raise AcodeError("ACODE-BKL-001", "A done task keeps its priority.", {"task": locked.key})
    before = locked.priority
    locked.priority = priority
    locked.save(update_fields=["priority", "updated_at"])
    _audit(locked, actor_name(user, actor), "reprioritised", previous=before, priority=priority)
    backlog_publish(locked.project_id, locked.pk)
    return locked


# -- documents: YAML imports and the Product Manager's proposals ----------------------------


def _text(raw: Mapping[str, Any], name: str, where: str, *, required: bool = False) -> str:
    value = raw.get(name, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise AcodeError(
            "ACODE-BKL-002", f"{where}: {name!r} must be {'non-blank ' if required else ''}text.",
            {"field": f"{where}.{name}"},
        )  # fmt: skip
    return value.strip()


def _key(raw: Mapping[str, Any], where: str) -> str:
    key = _text(raw, "key", where, required=True)
    if not SLUG.fullmatch(key):
        raise AcodeError(
            "ACODE-BKL-002", f"{where}: a key is letters, digits, - and _ (at most 64).",
            {"field": f"{where}.key"},
        )  # fmt: skip
    return key


def _criteria(raw: Mapping[str, Any], where: str) -> list[str]:
    value = raw.get("acceptance_criteria", [])
    if isinstance(value, str):
        value = [line.strip("- ").strip() for line in value.splitlines() if line.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AcodeError(
            "ACODE-BKL-002",
            f"{where}: 'acceptance_criteria' must be a list of texts.",
            {"field": f"{where}.acceptance_criteria"},
        )
    return [v.strip() for v in value if v.strip()]


def _task_specs(document: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Every task of the document with its epic's key ("" for a task outside any epic)."""
    specs: list[tuple[str, Mapping[str, Any]]] = []
    epics = document.get("epics", [])
    loose = document.get("tasks", [])
    if not isinstance(epics, list) or not isinstance(loose, list):
        raise AcodeError("ACODE-BKL-002", "'epics' and 'tasks' must be lists.", {"field": "epics"})
    for number, epic in enumerate(epics, 1):
        if not isinstance(epic, Mapping) or not isinstance(epic.get("tasks", []), list):
            raise AcodeError(
                "ACODE-BKL-002", f"epic {number} must be a mapping with a list of tasks.",
                {"field": f"epics.{number}"},
            )  # fmt: skip
        key = _key(epic, f"epic {number}")
        specs += [(key, task) for task in epic.get("tasks", [])]
    specs += [("", task) for task in loose]
    if len(specs) > MAX_TASKS_PER_DOCUMENT:
        raise AcodeError(
            "ACODE-BKL-002", f"At most {MAX_TASKS_PER_DOCUMENT} tasks per document.", {}
        )
    return specs


@transaction.atomic
def backlog_import(
    *,
    project: BacklogProject,
    document: Mapping[str, Any],
    actor: str,
    proposed_by: str = "",
) -> list[BacklogTask]:
    """Add a document's epics and tasks to the project, all or nothing: each task's key is
    new in the project, its dependencies name tasks of the document or the project, and
    they form no cycle. A proposal (``proposed_by``: the Product Manager) waits for a
    person unless the project lets proposals through."""
    if not isinstance(document, Mapping):
        raise AcodeError("ACODE-BKL-002", "A backlog document is a mapping.", {})
    project = BacklogProject.objects.select_for_update().get(pk=project.pk)
    epics = _epics_create(project, document.get("epics", []), actor)
    status = TaskStatus.PROPOSED
    if not proposed_by or project.auto_accept_proposals:
        status = TaskStatus.BACKLOG
    created: dict[str, BacklogTask] = {}
    wanted: dict[str, list[str]] = {}
    for epic_key, raw in _task_specs(document):
        where = f"task {len(created) + 1}"
        if not isinstance(raw, Mapping):
            raise AcodeError("ACODE-BKL-002", f"{where} must be a mapping.", {"field": where})
        key = _key(raw, where)
        priority = raw.get("priority", TaskPriority.MEDIUM)
        if priority not in TaskPriority.values:
            raise AcodeError(
                "ACODE-BKL-002", f"{where}: priority must be high, medium or low.",
                {"field": f"{where}.priority", "allowed": list(TaskPriority.values)},
            )  # fmt: skip
        if key in created or project.tasks.filter(key=key).exists():
            raise AcodeError("ACODE-BKL-002", f"Task key {key!r} is taken.", {"task": key})
        deps = raw.get("depends_on", [])
        if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
            raise AcodeError(
                "ACODE-BKL-002", f"{where}: 'depends_on' must list task keys.",
                {"field": f"{where}.depends_on"},
            )  # fmt: skip
        created[key] = BacklogTask.objects.create(
            project=project,
            epic=epics.get(epic_key),
            key=key,
            title=_text(raw, "title", where, required=True)[:200],
            description=_text(raw, "description", where),
            acceptance_criteria=_criteria(raw, where),
            priority=priority,
            template=_text(raw, "template", where),
            status=status,
            proposed_by=proposed_by,
            created_by=actor,
        )
        wanted[key] = deps
    _dependencies_set(project, created, wanted)
    for task in created.values():
        _audit(task, actor, "created", proposed_by=proposed_by)
    backlog_publish(project.pk)
    return list(created.values())


def _epics_create(project: BacklogProject, raw: Iterable[Any], actor: str) -> dict[str, Epic]:
    epics: dict[str, Epic] = {}
    for number, item in enumerate(raw if isinstance(raw, list) else [], 1):
        where = f"epic {number}"
        if not isinstance(item, Mapping):
            raise AcodeError("ACODE-BKL-002", f"{where} must be a mapping.", {"field": where})
        key = _key(item, where)
        found = project.epics.filter(key=key).first()
        epics[key] = found or Epic.objects.create(
            project=project,
            key=key,
            title=_text(item, "title", where, required=True)[:200],
            description=_text(item, "description", where),
            created_by=actor,
        )
    return epics


def _dependencies_set(
    project: BacklogProject, created: dict[str, BacklogTask], wanted: dict[str, list[str]]
) -> None:
    known = {t.key: t for t in project.tasks.exclude(key__in=list(created))}
    for key, deps in wanted.items():
        missing = [d for d in deps if d not in created and d not in known]
        if missing:
            raise AcodeError(
                "ACODE-BKL-002", f"Task {key!r} depends on unknown tasks: {', '.join(missing)}.",
                {"task": key, "unknown": missing},
            )  # fmt: skip
        created[key].depends_on.set([created.get(d) or known[d] for d in deps])
    # New tasks only point at new or existing ones, so a cycle is among the new ones.
    state: dict[str, int] = {}

    def visit(key: str, path: list[str]) -> None:
        if state.get(key) == 2:
            return
        if state.get(key) == 1:
            cycle = [*path[path.index(key) :], key]
            raise AcodeError(
                "ACODE-BKL-002", f"Dependencies form a cycle: {' → '.join(cycle)}.",
                {"cycle": cycle},
            )  # fmt: skip
        state[key] = 1
        for dep in wanted.get(key, []):
            visit(dep, [*path, key])
        state[key] = 2

    for key in wanted:
        visit(key, [])


def backlog_load(text: str) -> dict[str, Any]:
    """A backlog document from YAML (``acode.yamldoc``'s bounded loader)."""
    try:
        return load_yaml_mapping(text)
    except YamlDocumentError as exc:
        raise AcodeError(exc.code, exc.message, {"problems": exc.problems}) from exc
