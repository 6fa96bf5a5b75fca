"""Acceptance (issue 40), end to end on real Celery workers with beat and scripted models:
a small spec, given to the project, becomes three tasks with dependencies through the
Product Manager's job (its propose_backlog call) and a person accepting each through the
API; the scheduler runs the two independent ones concurrently and the third after them;
one is blocked and reassigned (to a template whose Coder is another model); all merge into
the integration branch; then the completeness check's Product Manager proposes one
follow-up; the kanban in two viewers' sockets follows the moves live."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from acode.routing import websocket_urlpatterns
from roles.services import role_write
from sessions_app.models import BacklogProject, BacklogTask, Job, Run
from sessions_app.services.backlog_integration import integration_git_dir
from tests.sessions_app.backlog.kit import (
    coded,
    coder_writes,
    project_on_repository,
    proposes,
    spec_with,
    wrote_nothing,
)
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.test_tasks import Worker

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"), reason="needs a Redis broker (make test provides one)"
    ),
]

ROUTER = URLRouter(websocket_urlpatterns)
CARD = re.compile(r'data-task="([\w-]+)" data-status="(\w+)"')


@pytest.fixture
def team_queue() -> str:
    name = f"test-backlog-{uuid.uuid4().hex[:8]}"
    for role in ("coder", "tester", "reviewer", "product-manager"):
        role_write(data={"queue": name}, create=False, slug=role, actor="test")
    return name


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def _statuses(project: BacklogProject) -> dict[str, str]:
    return dict(BacklogTask.objects.filter(project=project).values_list("key", "status"))


SPEC_TEXT = "Greetings: hello() says hello, bye() says bye, both() says both."
FOLLOW_UP = {"tasks": [{"key": "docs", "title": "Document the greetings",
                        "acceptance_criteria": ["README shows hello, bye and both"],
                        "depends_on": ["both"]}]}  # fmt: skip
FINAL = {"hello": "done", "bye": "done", "both": "done", "docs": "proposed"}


def _accept_proposals(api: APIClient, project: BacklogProject, accepted: set[str]) -> None:
    """A person accepts each task the Product Manager proposed for the spec (the API)."""
    for key in ("hello", "bye", "both"):
        if key in accepted or not BacklogTask.objects.filter(project=project, key=key).exists():
            continue
        answer = api.post(f"/api/backlog/projects/{project.slug}/tasks/{key}/accept/")
        assert answer.status_code == 200, answer.content
        accepted.add(key)


def test_a_spec_runs_through_the_backlog_on_real_workers(
    user: User, django_user_model: Any, tmp_path: Path, team_queue: str, workers: list[Worker],
    api: APIClient,
) -> None:  # fmt: skip
    lead = django_user_model.objects.create_superuser("lead", "l@x", "pw-lead-123")
    templates = coded(
        hello=[coder_writes("hello")],
        bye=[wrote_nothing()] * 2,  # blocks: nothing written, twice
        both=[coder_writes("both")],
        other=[coder_writes("bye")],  # the reassignment's model
    )
    project = project_on_repository(
        user, tmp_path, max_concurrent_runs=2, max_task_attempts=2,
        reassign_template=templates["other"],
    )  # fmt: skip
    # The Product Manager's two jobs: the plan (the spec's three tasks, each with its
    # template), then the completeness check (one follow-up).
    scripted_model("product-manager", [
        proposes(spec_with({k: templates[k] for k in ("hello", "bye", "both")})),
        proposes(FOLLOW_UP, final="The docs are missing."),
    ])  # fmt: skip
    seen: dict[str, list[dict[str, str]]] = {"owner": [], "lead": []}
    accepted: set[str] = set()

    async def body() -> None:
        sockets = {}
        for name, who in (("owner", user), ("lead", lead)):
            comm = WebsocketCommunicator(ROUTER, f"/ws/backlog/{project.slug}/")
            comm.scope["user"] = who
            assert (await comm.connect(timeout=10))[0]  # a first render on a busy machine
            sockets[name] = comm
        workers.append(
            Worker(team_queue, tmp_path / "worker.log", beat=True, concurrency=2,
                   extra_env={"ACODE_BACKLOG_TICK_SECONDS": "1"})
        )  # fmt: skip
        planned = await database_sync_to_async(api.post)(
            f"/api/backlog/projects/{project.slug}/plan/", {"spec": SPEC_TEXT}, format="json"
        )
        assert planned.status_code == 202, planned.content
        deadline = time.monotonic() + 240  # before pytest's 300 s: say where it stood
        while time.monotonic() < deadline:
            for name, comm in sockets.items():
                while not await comm.receive_nothing(timeout=0.05):
                    seen[name].append(dict(CARD.findall(await comm.receive_from())))
            if len(accepted) < 3:
                await database_sync_to_async(_accept_proposals)(api, project, accepted)
            now = await database_sync_to_async(_statuses)(project)
            if now == FINAL and all(s and s[-1] == now for s in seen.values()):
                break
            await asyncio.sleep(0.3)
        for comm in sockets.values():
            await comm.disconnect()

    async_to_sync(body)()
    log = (tmp_path / "worker.log").read_text()[-3000:]
    last = {name: states[-1] if states else None for name, states in seen.items()}
    assert _statuses(project) == FINAL, (_statuses(project), last, log)
    project.refresh_from_db()
    pm_jobs = list(Job.objects.filter(session=project.pm_session).order_by("created_at"))
    assert [j.status for j in pm_jobs] == ["succeeded", "succeeded"], log
    assert SPEC_TEXT in pm_jobs[0].request and "## Tasks done" in pm_jobs[1].request
    assert "hello.py" in pm_jobs[1].request  # the integration branch's files
    assert project.pm_job_kind == "check"
    tasks = {t.key: t for t in BacklogTask.objects.filter(project=project)}
    assert {d.key for d in tasks["both"].depends_on.all()} == {"hello", "bye"}
    assert {t.proposed_by for t in tasks.values()} == {"product-manager"}

    runs = {t.key: t for t in BacklogTask.objects.filter(project=project)}
    hello_run = Run.objects.get(backlog_tasks=runs["hello"])
    bye_runs = list(Run.objects.filter(session__title__contains="/bye:").order_by("created_at"))
    both_run = Run.objects.get(backlog_tasks=runs["both"])
    # The two independent tasks ran at the same time; the dependent one after both.
    ends = {"hello": hello_run.finished_at, "bye0": bye_runs[0].finished_at,
            "bye": bye_runs[-1].finished_at}  # fmt: skip
    done = {key: end for key, end in ends.items() if end is not None}
    assert done.keys() == ends.keys(), ends
    assert bye_runs[0].created_at < done["hello"]
    assert hello_run.created_at < done["bye0"]
    assert both_run.created_at > max(done["hello"], done["bye"])
    # bye's first run was blocked; it was reassigned to the other template's model.
    assert [r.template.slug for r in bye_runs] == [templates["bye"], templates["other"]]
    assert bye_runs[0].status in ("blocked", "failed")
    assert (runs["bye"].attempts, runs["bye"].blocked_runs) == (2, 1)

    tree = subprocess.run(
        ["git", f"--git-dir={integration_git_dir(project)}", "ls-tree", "--name-only",
         f"refs/heads/{project.integration_branch}"], capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert sorted(tree) == ["README.md", "both.py", "bye.py", "hello.py"]

    for name, snapshots in seen.items():
        assert snapshots[-1] == FINAL, name
        assert any(s.get("hello") == s.get("bye") == "in_progress" for s in snapshots), name
        assert any(s.get("both") == "in_progress" for s in snapshots), name
