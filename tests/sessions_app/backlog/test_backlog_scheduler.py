"""The scheduler: ready tasks start as runs while the project has room, highest priority
first; tasks follow their runs (merged into the integration branch when they succeed, a
blocked run reassigned, then blocked); a merge conflict sends the task back; two
schedulers racing never start a task twice (PostgreSQL row locks); a worker queue that
holds ACODE_BACKLOG_QUEUE_DEPTH jobs no worker has taken starts nothing more, and the
card says why."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client

from roles.models import Role
from roles.services import role_write
from sessions_app.models import (
    BacklogProject,
    BacklogTask,
    Job,
    Run,
    RunStatus,
    WorkflowStage,
    WorkflowTemplate,
)
from sessions_app.services.backlog import backlog_import, task_unblock
from sessions_app.services.backlog_integration import integration_git_dir, integration_head
from sessions_app.services.backlog_scheduler import backlog_schedule, project_schedule, task_start
from sessions_app.services.workspaces import git_dir_of
from tests.conftest import needs_postgres
from tests.sessions_app.backlog.kit import (
    coded,
    coder_writes,
    project_with_spec,
    statuses,
    wrote_nothing,
)
from tests.sessions_app.runkit import calls, drive, remote_branch

pytestmark = pytest.mark.django_db


def run_of(key: str) -> Run:
    run = BacklogTask.objects.get(key=key).run
    assert run is not None
    return run


def integrated_files(project: BacklogProject) -> list[str]:
    out = subprocess.run(
        ["git", f"--git-dir={integration_git_dir(project)}", "ls-tree", "--name-only",
         "refs/heads/acode/integration"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return sorted(out.stdout.split())


def test_independent_tasks_run_together_the_dependent_one_after_and_all_merge(
    user: User, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    templates = coded(**{k: [coder_writes(k)] for k in ("hello", "bye", "both")})
    project = project_with_spec(user, tmp_path, templates, max_concurrent_runs=2)

    assert backlog_schedule() == ["hello", "bye"]  # the dependent one waits
    assert statuses(project) == {"hello": "in_progress", "bye": "in_progress", "both": "backlog"}
    assert "- hello() returns 'hello'" in run_of("hello").request  # the Reviewer reads it
    assert run_of("hello").session_id != run_of("bye").session_id
    assert backlog_schedule() == []  # no room, and "both" is not ready

    assert drive(run_of("hello")).status == RunStatus.SUCCEEDED
    assert drive(run_of("bye")).status == RunStatus.SUCCEEDED
    assert backlog_schedule() == ["both"]
    assert statuses(project) == {"hello": "done", "bye": "done", "both": "in_progress"}
    assert drive(run_of("both")).status == RunStatus.SUCCEEDED
    with django_capture_on_commit_callbacks(execute=True):
        backlog_schedule()

    assert statuses(project) == {"hello": "done", "bye": "done", "both": "done"}
    # A done task's session is archived: its checkout freed, its branch kept.
    done = [BacklogTask.objects.get(key=k).session for k in ("hello", "bye", "both")]
    assert [s.status for s in done if s is not None] == ["archived"] * 3
    both = done[2]
    assert both is not None and not Path(both.workspace).exists()
    assert git_dir_of(both.pk).is_dir()
    assert integrated_files(project) == ["README.md", "both.py", "bye.py", "hello.py"]
    assert BacklogTask.objects.get(key="both").merged_commit == integration_head(project)
    # The repository is pushable: the integration branch is pushed like a session branch.
    assert remote_branch(tmp_path / "app.git", "acode/integration") == integration_head(project)
    project.refresh_from_db()
    assert project.integration_pushed.startswith("pushed to ")


def test_a_blocked_run_is_reassigned_then_the_task_blocks(user: User, tmp_path: Path) -> None:
    # The Coder writes nothing, and nothing again when told so: the run stops. The
    # reassignment's template routes its Coder to another model, which writes nothing too.
    templates = coded(hello=[wrote_nothing()] * 2, other=[wrote_nothing()] * 2)
    project_with_spec(user, tmp_path, {"hello": templates["hello"]},
                                max_concurrent_runs=1, max_task_attempts=2,
                                reassign_template=templates["other"])  # fmt: skip
    BacklogTask.objects.exclude(key="hello").delete()

    assert backlog_schedule() == ["hello"]
    first = drive(run_of("hello"))
    assert first.status in (RunStatus.BLOCKED, RunStatus.FAILED), first.status
    assert backlog_schedule() == ["hello"]  # reassigned: a second run at once
    task = BacklogTask.objects.get(key="hello")
    assert (task.attempts, task.blocked_runs) == (2, 1)
    assert "Reassigned: run 2 of 2" in task.reason
    assert task.run_id != first.pk
    assert "An earlier run of this task did not finish" in run_of("hello").request
    assert run_of("hello").template.slug == templates["other"]

    drive(run_of("hello"))
    assert backlog_schedule() == []
    task.refresh_from_db()
    assert task.status == "blocked"
    assert task.reason.startswith(f"Run {task.run_id} ended")


def test_a_merge_conflict_sends_the_task_back_with_the_paths(user: User, tmp_path: Path) -> None:
    writes_x = {
        key: [calls(("create_file", {"path": "x.py", "content": f"X = {key!r}\n"}), final="x")]
        for key in ("hello", "bye")
    }
    project = project_with_spec(user, tmp_path, coded(**writes_x), max_concurrent_runs=2)
    BacklogTask.objects.filter(key="both").delete()
    assert backlog_schedule() == ["hello", "bye"]
    drive(run_of("hello"))
    drive(run_of("bye"))
    backlog_schedule()

    bye = BacklogTask.objects.get(key="bye")
    assert statuses(project) == {"hello": "done", "bye": "in_progress"}
    assert bye.conflict == ["x.py"]
    assert "conflicted in: x.py" in bye.reason
    assert backlog_schedule() == []  # it waits for a person
    assert task_unblock(task=bye, user=user).status == "backlog"


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_two_schedulers_racing_start_each_task_once(
    user: User, tmp_path: Path, settings: Any
) -> None:
    settings.ACODE_BACKLOG_QUEUE_DEPTH = 0  # the project's room is the only limit here
    project = project_with_spec(user, tmp_path, coded(), max_concurrent_runs=5)
    backlog_import(project=project, actor="t", document={"tasks": [
        {"key": f"t{n}", "title": f"T{n}"} for n in range(4)]})  # fmt: skip
    stale = BacklogTask.objects.get(key="hello")
    start = threading.Barrier(4)
    results: dict[str, Any] = {}

    def scheduler(name: str) -> None:
        try:
            start.wait()
            results[name] = project_schedule(project.pk)
        except Exception as exc:
            results[name] = exc
        finally:
            connection.close()

    def claimer(name: str) -> None:
        try:
            start.wait()  # both hold the same stale row: one claim wins
            results[name] = task_start(project, stale)
        except Exception as exc:
            results[name] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=scheduler, args=(f"s{n}",)) for n in range(2)]
    threads += [threading.Thread(target=claimer, args=(f"c{n}",)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert not [r for r in results.values() if isinstance(r, Exception)], results
    started = [key for name in ("s0", "s1") for key in results[name]]
    assert sorted(set(started)) == sorted(started)  # no task started by both schedulers
    # "hello" starts once: a claimer's stale row wins at most once, and a scheduler that got
    # there first leaves both claims False (under load the schedulers may be first).
    claims = [results["c0"], results["c1"]].count(True)
    assert claims <= 1 and claims + started.count("hello") == 1, results
    # Six ready tasks, room for five: five runs, one per task, the sixth still waiting.
    tasks = BacklogTask.objects.exclude(key="both")
    assert sorted(t.attempts for t in tasks) == [0, 1, 1, 1, 1, 1]
    assert Run.objects.count() == 5
    assert all(t.run_id is None or t.status == "in_progress" for t in tasks)


def waiting(key: str) -> str:
    return BacklogTask.objects.get(key=key).waiting


def test_a_full_worker_queue_holds_its_tasks_and_their_cards_say_why(
    user: User, tmp_path: Path, settings: Any
) -> None:
    settings.ACODE_BACKLOG_QUEUE_DEPTH = 1
    templates = coded(hello=[coder_writes("hello")], bye=[coder_writes("bye")])
    project = project_with_spec(user, tmp_path, templates, max_concurrent_runs=3)
    BacklogTask.objects.filter(key="both").delete()

    # hello's Coder job joins the Coder's queue (agents), which is then full: bye waits.
    assert backlog_schedule() == ["hello"]
    assert Job.objects.filter(status="queued", role__queue="agents").count() == 1
    full = "Waiting: queue agents is full (jobs no worker has taken: 1; the limit is 1)."
    assert statuses(project) == {"hello": "in_progress", "bye": "backlog"}
    assert waiting("bye") == full
    client = Client()
    client.force_login(user)
    page = client.get(f"/backlog/{project.slug}/").content.decode()
    assert full in page
    assert backlog_schedule() == []

    # A lower-priority task whose run starts on another queue is not held back.
    role_write(data={"queue": "pool-b"}, create=False, slug="tester", actor="test")
    tests_first = WorkflowTemplate.objects.create(slug="tests-first", name="~ tests first",
                                                  risk_tier="low")  # fmt: skip
    WorkflowStage.objects.create(template=tests_first, position=1, purpose="test",
                                 role=Role.objects.get(slug="tester"))  # fmt: skip
    side = {"key": "side", "title": "Side", "priority": "low", "template": "tests-first"}
    backlog_import(project=project, actor="t", document={"tasks": [side]})
    assert backlog_schedule() == ["side"]
    assert waiting("bye") == full

    # Once hello's run is over its queue is empty: bye starts, its card no longer waits.
    assert drive(run_of("hello")).status == RunStatus.SUCCEEDED
    assert backlog_schedule() == ["bye"]
    assert waiting("bye") == ""
    assert statuses(project) == {"hello": "done", "bye": "in_progress", "side": "in_progress"}


def test_a_task_past_the_projects_room_says_it_waits_for_room(user: User, tmp_path: Path) -> None:
    templates = coded(hello=[coder_writes("hello")], bye=[coder_writes("bye")])
    project_with_spec(user, tmp_path, templates, max_concurrent_runs=1)
    assert backlog_schedule() == ["hello"]
    assert waiting("bye") == "Waiting: the project runs at most 1 task at once."
    assert waiting("hello") == ""
    assert waiting("both") == ""  # not ready: its card says whom it waits for
