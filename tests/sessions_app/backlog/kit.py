"""Helpers for backlog tests: a project on a registered repository, a three-task spec and
scripted models that carry each task's run (low risk: Coder, Tester, Reviewer), and the
Product Manager's scripted proposals of it."""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from roles.models import EndpointKind, ModelEndpoint
from sessions_app.models import (
    BacklogProject,
    BacklogTask,
    Repository,
    WorkflowStage,
    WorkflowTemplate,
)
from sessions_app.services.backlog import backlog_import, project_create
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import bare_remote, calls, review

SPEC: dict[str, Any] = {
    "epics": [
        {
            "key": "greetings",
            "title": "Greetings",
            "tasks": [
                {
                    "key": "hello",
                    "title": "Add hello.py",
                    "acceptance_criteria": ["hello() returns 'hello'"],
                    "priority": "high",
                },
                {
                    "key": "bye",
                    "title": "Add bye.py",
                    "acceptance_criteria": ["bye() returns 'bye'"],
                    "priority": "medium",
                },
                {
                    "key": "both",
                    "title": "Add both.py using hello and bye",
                    "acceptance_criteria": ["both() returns 'hello bye'"],
                    "priority": "high",
                    "depends_on": ["hello", "bye"],
                },
            ],
        }
    ]
}

FILES = {
    "hello": ("hello.py", "def hello():\n    return 'hello'\n"),
    "bye": ("bye.py", "def bye():\n    return 'bye'\n"),
    "both": ("both.py", "from bye import bye\nfrom hello import hello\n\n\ndef both():\n"
             "    return f'{hello()} {bye()}'\n"),
}  # fmt: skip


def coder_writes(key: str) -> list[dict[str, Any]]:
    path, content = FILES[key]
    return calls(("create_file", {"path": path, "content": content}), final=f"wrote {path}")


def wrote_nothing() -> list[dict[str, Any]]:
    return [{"content": "I looked and decided to change nothing."}]


def script_team() -> None:
    """Every run's Tester has nothing to run and its Reviewer approves."""
    scripted_model("tester", [[{"content": "no tests to run"}]])
    scripted_model("reviewer", [review("approve", "meets its criteria")])


def task_template(name: str, coder: list[list[dict[str, Any]]]) -> str:
    """A copy of the low-risk template whose Coder stage uses a scripted endpoint of its
    own (a scripted model replays per session, and each task's run has its own session:
    the task's template is how each task's Coder gets its own script)."""
    endpoint = ModelEndpoint.objects.create(
        name=f"coder-{name}", kind=EndpointKind.SCRIPTED, model="scripted-test", script=coder
    )
    low = WorkflowTemplate.objects.get(slug="low")
    template = WorkflowTemplate.objects.create(
        slug=f"task-{name}", name=f"~ task {name}", risk_tier="low"
    )
    for stage in low.stages.all():
        WorkflowStage.objects.create(
            template=template, position=stage.position, purpose=stage.purpose,
            role=stage.role, model=endpoint.name if stage.purpose == "code" else "",
        )  # fmt: skip
    return template.slug


def coded(**coders: list[list[dict[str, Any]]]) -> dict[str, str]:
    """A template per task key (``task_template``): {key: template slug}."""
    script_team()
    return {key: task_template(key, coder) for key, coder in coders.items()}


def spec_with(templates: dict[str, str]) -> dict[str, Any]:
    """``SPEC`` with each task's template from ``templates`` (what the scripted Product
    Manager proposes, so each task's Coder gets its own script)."""
    spec: dict[str, Any] = copy.deepcopy(SPEC)
    for task in spec["epics"][0]["tasks"]:
        if task["key"] in templates:
            task["template"] = templates[task["key"]]
    return spec


def proposes(document: dict[str, Any], final: str = "proposed") -> list[dict[str, Any]]:
    """A Product Manager job's script: one propose_backlog call, then its answer."""
    return calls(("propose_backlog", document), final=final)


def project_with_spec(
    owner: User, tmp_path: Path, templates: dict[str, str], **options: Any
) -> BacklogProject:
    """A project on a fresh repository (its own slug: its own integration repository)
    with the three tasks of ``SPEC``, each run with its template from ``templates``."""
    project = project_on_repository(owner, tmp_path, **options)
    backlog_import(project=project, document=SPEC, actor="test")
    for key, slug in templates.items():
        BacklogTask.objects.filter(project=project, key=key).update(template=slug)
    return project


def project_on_repository(owner: User, tmp_path: Path, **options: Any) -> BacklogProject:
    """A project with no tasks on a fresh repository (its own integration repository)."""
    remote = bare_remote(tmp_path / "app.git")
    repository = Repository.objects.create(name="app", source=str(remote), pushable=True)
    repository.users.add(owner)
    project = project_create(
        owner=owner,
        slug=f"shop-{uuid.uuid4().hex[:8]}",
        title="Shop",
        repository=repository,
        run_risk="low",
        **options,
    )
    return project


def statuses(project: BacklogProject) -> dict[str, str]:
    return dict(BacklogTask.objects.filter(project=project).values_list("key", "status"))
