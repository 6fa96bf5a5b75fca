"""A backlog document (YAML import, the Product Manager's proposals): its form and how it
fits a project, checked before anything is written.

``DOCUMENT_SCHEMA`` (JSON Schema, ``acode.backlog_form``: the Product Manager's tool
declares the same form) is the form: the API publishes it for
``POST /api/backlog/projects/{slug}/import/`` and ``document_tasks`` checks it first, so
what the schema allows and the server refuses is only how the document fits the project
(``fit_problems``: a key that is taken, a dependency on no task, a cycle), refused with
409 ACODE-BKL-004, like a workflow import that does not fit (ACODE-IMP-003).
"""

from __future__ import annotations

import graphlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from acode.backlog_form import DOCUMENT_SCHEMA
from acode.errors import AcodeError
from acode.inputs import json_schema_check
from acode.yamldoc import YamlDocumentError, load_yaml_mapping
from sessions_app.models import TaskPriority


@dataclass(frozen=True)
class TaskSpec:
    """One task of a checked document."""

    key: str
    title: str
    epic: str = ""  # its epic's key
    description: str = ""
    acceptance_criteria: list[str] = field(default_factory=list)
    priority: str = TaskPriority.MEDIUM
    depends_on: list[str] = field(default_factory=list)
    template: str = ""


@dataclass(frozen=True)
class EpicSpec:
    key: str
    title: str
    description: str = ""


def backlog_load(text: str) -> dict[str, Any]:
    """A backlog document from YAML (``acode.yamldoc``'s bounded loader)."""
    try:
        return load_yaml_mapping(text)
    except YamlDocumentError as exc:
        raise AcodeError(exc.code, exc.message, {"problems": exc.problems}) from exc


def _criteria(value: str | list[str]) -> list[str]:
    lines = value.splitlines() if isinstance(value, str) else value
    return [line.strip().removeprefix("- ").strip() for line in lines if line.strip()]


def _task(raw: Mapping[str, Any], epic: str) -> TaskSpec:
    return TaskSpec(
        key=raw["key"],
        title=raw["title"].strip(),
        epic=epic,
        description=raw.get("description", "").strip(),
        acceptance_criteria=_criteria(raw.get("acceptance_criteria", [])),
        priority=raw.get("priority", TaskPriority.MEDIUM),
        depends_on=list(raw.get("depends_on", [])),
        template=raw.get("template", ""),
    )


def document_tasks(document: Any) -> tuple[list[EpicSpec], list[TaskSpec]]:
    """The epics and tasks of a document of the schema's form; ACODE-BKL-002 (400) with
    every problem of its form listed otherwise."""
    refusal = "Not a backlog document"
    json_schema_check(DOCUMENT_SCHEMA, document, code="ACODE-BKL-002", refusal=refusal)
    epics = [
        EpicSpec(e["key"], e["title"].strip(), e.get("description", "").strip())
        for e in document.get("epics", [])
    ]
    tasks = [_task(t, e["key"]) for e in document.get("epics", []) for t in e.get("tasks", [])]
    tasks += [_task(t, "") for t in document.get("tasks", [])]
    return epics, tasks


def fit_problems(tasks: list[TaskSpec], taken: Iterable[str]) -> list[str]:
    """How the document's tasks do not fit a project whose tasks have the keys ``taken``:
    a key used twice, a dependency on no task, a cycle (new tasks only point at new or
    existing ones, so a cycle is among the new ones)."""
    existing = set(taken)
    problems: list[str] = []
    seen: set[str] = set()
    for task in tasks:
        if task.key in seen or task.key in existing:
            problems.append(f"task {task.key!r}: the key is taken")
        seen.add(task.key)
    for task in tasks:
        missing = [d for d in task.depends_on if d not in seen and d not in existing]
        if missing:
            problems.append(f"task {task.key!r} depends on unknown tasks: {', '.join(missing)}")
    graph = {t.key: [d for d in t.depends_on if d in seen] for t in tasks}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        cycle = list(reversed(exc.args[1]))
        problems.append(f"dependencies form a cycle: {' → '.join(cycle)}")
    return problems


def fit_check(tasks: list[TaskSpec], taken: Iterable[str]) -> None:
    """Refuse (ACODE-BKL-004, 409) a document that does not fit the project."""
    problems = fit_problems(tasks, taken)
    if problems:
        raise AcodeError(
            "ACODE-BKL-004",
            f"The document does not fit the project, {len(problems)} problem(s): "
            + "; ".join(problems[:5]),
            {"problems": problems},
        )
