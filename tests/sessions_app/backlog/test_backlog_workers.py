"""Acceptance (issue 40), end to end on real Celery workers with beat and scripted models:
a small spec becomes three tasks with dependencies; the scheduler runs the two
independent ones concurrently and the third after them; one is blocked and reassigned
(to a template whose Coder is another model); all merge into the integration branch;
the kanban in two viewers' sockets follows the moves live."""

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

from acode.routing import websocket_urlpatterns
from roles.services import role_write
from sessions_app.models import BacklogProject, BacklogTask, Run
from sessions_app.services.backlog_integration import integration_git_dir
from tests.sessions_app.backlog.kit import coded, coder_writes, project_with_spec, wrote_nothing
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
    for role in ("coder", "tester", "reviewer"):
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


def test_a_spec_runs_through_the_backlog_on_real_workers(
    user: User, django_user_model: Any, tmp_path: Path, team_queue: str, workers: list[Worker]
) -> None:
    lead = django_user_model.objects.create_superuser("lead", "l@x", "pw-lead-123")
    templates = coded(
        hello=[coder_writes("hello")],
        bye=[wrote_nothing()] * 2,  # blocks: nothing written, twice
        both=[coder_writes("both")],
        other=[coder_writes("bye")],  # the reassignment's model
    )
    project = project_with_spec(
        user, tmp_path, {k: templates[k] for k in ("hello", "bye", "both")},
        max_concurrent_runs=2, max_task_attempts=2, reassign_template=templates["other"],
    )  # fmt: skip
    seen: dict[str, list[dict[str, str]]] = {"owner": [], "lead": []}

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
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            for name, comm in sockets.items():
                while not await comm.receive_nothing(timeout=0.05):
                    seen[name].append(dict(CARD.findall(await comm.receive_from())))
            now = await database_sync_to_async(_statuses)(project)
            if set(now.values()) == {"done"} and all(s and s[-1] == now for s in seen.values()):
                break
            await asyncio.sleep(0.3)
        for comm in sockets.values():
            await comm.disconnect()

    async_to_sync(body)()
    log = (tmp_path / "worker.log").read_text()[-3000:]
    assert _statuses(project) == {"hello": "done", "bye": "done", "both": "done"}, log

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
        assert snapshots[-1] == {"hello": "done", "bye": "done", "both": "done"}, name
        assert any(s.get("hello") == s.get("bye") == "in_progress" for s in snapshots), name
        assert any(s.get("both") == "in_progress" for s in snapshots), name
