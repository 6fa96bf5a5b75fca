"""The backlog as data: imports checked all or nothing, status moves only as the table
allows, proposals waiting for a person, priorities and unblocking, each audited."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from acode.errors import AcodeError
from sessions_app.models import AuditEvent, BacklogTask, TaskStatus
from sessions_app.services.backlog import (
    backlog_import,
    project_create,
    task_accept,
    task_move,
    task_reprioritise,
    task_unblock,
)
from sessions_app.services.backlog_document import backlog_load
from tests.sessions_app.backlog.kit import SPEC, statuses

FORM, FITS = "ACODE-BKL-002", "ACODE-BKL-004"  # 400: its form; 409: how it fits the project

pytestmark = pytest.mark.django_db


def test_a_spec_becomes_epics_and_tasks_with_dependencies(user: User) -> None:
    project = project_create(owner=user, slug="p", title="P")
    created = backlog_import(project=project, document=SPEC, actor="alice")
    assert [t.key for t in created] == ["hello", "bye", "both"]
    both = BacklogTask.objects.get(key="both")
    assert sorted(d.key for d in both.depends_on.all()) == ["bye", "hello"]
    assert both.epic is not None and both.epic.key == "greetings"
    assert both.acceptance_criteria == ["both() returns 'hello bye'"]
    assert statuses(project) == {k: "backlog" for k in ("hello", "bye", "both")}
    assert AuditEvent.objects.filter(event_type="BacklogEvent", result="created").count() == 3


@pytest.mark.parametrize(
    ("document", "code", "says"),
    [
        ({"tasks": [{"key": "a", "title": "A", "depends_on": ["zzz"]}]}, FITS,
         "depends on unknown tasks: zzz"),
        (
            {"tasks": [{"key": "a", "title": "A", "depends_on": ["b"]},
                       {"key": "b", "title": "B", "depends_on": ["a"]}]},
            FITS, "cycle",
        ),
        ({"tasks": [{"key": "a", "title": "A"}, {"key": "a", "title": "again"}]}, FITS,
         "task 'a': the key is taken"),
        ({"tasks": [{"key": "a", "title": "A", "priority": "urgent"}]}, FORM,
         "tasks/0/priority"),
        ({"tasks": [{"key": "a", "title": ""}]}, FORM, "tasks/0/title"),
        ({"tasks": [{"key": "a b", "title": "A"}]}, FORM, "tasks/0/key"),
        ({"epics": [1]}, FORM, "epics/0"),
        ({"tasks": [{"key": "a", "title": "A", "owner": "me"}]}, FORM, "tasks/0"),
        (["a list"], FORM, "(the document)"),
    ],
)  # fmt: skip
def test_a_bad_document_writes_nothing(
    user: User, document: dict[str, object], code: str, says: str
) -> None:
    project = project_create(owner=user, slug="p", title="P")
    with pytest.raises(AcodeError) as refused:
        backlog_import(project=project, document=document, actor="alice")
    assert refused.value.code == code
    assert says in refused.value.message, refused.value.message
    assert not BacklogTask.objects.exists()


def test_yaml_is_read_with_the_bounded_loader() -> None:
    assert backlog_load("tasks:\n  - key: a\n    title: A\n") == {
        "tasks": [{"key": "a", "title": "A"}]
    }
    with pytest.raises(AcodeError) as refused:
        backlog_load("- just\n- a list\n")
    assert refused.value.code.startswith("ACODE-IMP")


def test_status_moves_follow_the_table(user: User) -> None:
    project = project_create(owner=user, slug="p", title="P")
    (task,) = backlog_import(project=project, document={"tasks": [{"key": "a", "title": "A"}]},
                             actor="alice")  # fmt: skip
    with pytest.raises(AcodeError) as refused:
        task_move(task=task, to=TaskStatus.DONE, actor="alice")
    assert refused.value.code == "ACODE-BKL-001"
    assert refused.value.details["allowed"] == ["in_progress", "blocked"]
    task = task_move(task=task, to=TaskStatus.BLOCKED, actor="alice", reason="waits on legal")
    assert (task.status, task.reason) == ("blocked", "waits on legal")
    task = task_unblock(task=task, user=user, note="legal said yes")
    assert (task.status, task.reason) == ("backlog", "legal said yes")
    moves = AuditEvent.objects.filter(event_type="BacklogEvent").order_by("id")
    assert [e.result for e in moves][-2:] == ["blocked", "backlog"]


def test_proposals_wait_for_a_person_unless_the_project_lets_them_through(user: User) -> None:
    project = project_create(owner=user, slug="p", title="P")
    (task,) = backlog_import(project=project, document={"tasks": [{"key": "a", "title": "A"}]},
                             actor="pm", proposed_by="product-manager")  # fmt: skip
    assert task.status == "proposed"
    assert task_accept(task=task, user=user).status == "backlog"
    trusting = project_create(owner=user, slug="q", title="Q", auto_accept_proposals=True)
    (through,) = backlog_import(project=trusting, document={"tasks": [{"key": "a", "title": "A"}]},
                                actor="pm", proposed_by="product-manager")  # fmt: skip
    assert through.status == "backlog"


def test_reprioritise(user: User, tmp_path: Path) -> None:
    project = project_create(owner=user, slug="p", title="P")
    (task,) = backlog_import(project=project, document={"tasks": [{"key": "a", "title": "A"}]},
                             actor="alice")  # fmt: skip
    assert task.priority == "medium"
    assert task_reprioritise(task=task, priority="high", user=user).priority == "high"
    with pytest.raises(AcodeError) as refused:
        task_reprioritise(task=task, priority="urgent", user=user)
    assert refused.value.code == "ACODE-API-400"
