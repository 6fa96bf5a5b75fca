"""A command's writes survive its worker dying while they are applied.

With real processes: a Coder's command writes 2,000 files; the worker is killed while it
applies them (the changes recorded, the journal of moves still open); a second worker
(with beat) requeues the job, whose next attempt finishes the moves before it starts and
finds the job's changes already recorded: the run succeeds instead of failing with
ACODE-JOB-009 ("the Coder changed nothing"). In-process: an apply cut off half way through
its moves is finished by the next attempt, and the workspace holds what the pending
changes say."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.contrib.auth.models import User

from roles.services import role_write
from sessions_app.agent.tool_context import tool_context
from sessions_app.containment import applymoves
from sessions_app.models import AgentSession, Job, JobStatus, PendingChange, WorkspaceApply
from sessions_app.services.jobs import job_create
from sessions_app.services.runs import run_start
from sessions_app.services.sessions import session_create
from tests.conftest import needs_postgres, shared_database_url
from tests.sessions_app import runkit
from tests.sessions_app.agent.containment.kit import needs_sandbox
from tests.sessions_app.jobkit import scripted_model, session_in
from tests.sessions_app.runkit import PLAN_ONE_STEP, calls, review
from tests.sessions_app.test_runs_workers import (
    RUN_ROLES,
    stage_job,
    wait_run,
    waiting_on_a_lock,
)
from tests.sessions_app.test_tasks import Worker

FILES = 2000
WRITE_MANY = (
    f"mkdir -p notes; i=0; while [ $i -lt {FILES} ]; do echo note $i > notes/n$i.md; "
    "i=$((i+1)); done"
)


def _coder_may_run_shell() -> None:
    role_write(data={"command_patterns": []}, create=False, slug="coder", actor="test")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs a Redis broker")
@needs_sandbox
@needs_postgres
def test_a_run_survives_its_worker_killed_while_a_coder_applies_its_writes(
    user: User, tmp_path: Path
) -> None:
    queue = f"test-apply-{os.getpid()}-{int(time.time())}"
    for role in RUN_ROLES:  # the Tester and Reviewer read 2,000 pending diffs
        role_write(data={"queue": queue, "max_tokens": 5_000_000}, create=False, slug=role,
                   actor="test")  # fmt: skip
    _coder_may_run_shell()
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("coder", [calls(("execute_command", {"argv": ["sh", "-c", WRITE_MANY]}))])
    scripted_model("tester", [runkit.script_tester()])
    scripted_model("reviewer", [review("approve", "notes look right")])
    workers = [Worker(queue, tmp_path / "first.log")]
    try:
        session = session_create(owner=user, title="apply crash", task="notes")
        run = run_start(session=session, request="Write the notes", user=user, risk="medium")
        coding = stage_job(run, "code", (JobStatus.RUNNING,), 60)
        with psycopg.connect(shared_database_url()) as other:
            # The changes are recorded with the journal; its moves run; closing it needs the
            # session's row, held here: the worker is killed with the journal still open.
            deadline = time.monotonic() + 120
            while not WorkspaceApply.objects.filter(session=session).exists():
                assert time.monotonic() < deadline, "the Coder's writes were never recorded"
                time.sleep(0.005)
            other.execute(
                f"SELECT id FROM {AgentSession._meta.db_table} WHERE id = %s FOR UPDATE",
                [session.pk],
            )
            waiting_on_a_lock(30)
            workers[0].kill()
            other.rollback()
        assert WorkspaceApply.objects.filter(session=session).count() == 1
        assert PendingChange.objects.filter(session=session).count() == FILES
        workers.append(Worker(queue, tmp_path / "second.log", beat=True))
        run = wait_run(run, 180)
    finally:
        for worker in workers:
            worker.stop()
    assert run.status == "succeeded", (run.error_code, run.message)
    coding.refresh_from_db()
    assert coding.attempts == 2 and coding.status == JobStatus.SUCCEEDED
    assert not WorkspaceApply.objects.filter(session=session).exists()
    assert not PendingChange.objects.filter(session=session).exists()  # all committed
    ws = Path(AgentSession.objects.get(pk=session.pk).workspace)
    assert len(os.listdir(ws / "notes")) == FILES
    assert not [n for n in os.listdir(ws) if n.startswith(".acode-staging-")]
    assert any("Write the notes" in s for s in runkit.branch_log(run))


class _Killed(BaseException):
    """What a worker dying looks like to the code it was running: nothing after it runs."""


@pytest.mark.django_db
@needs_sandbox
def test_an_apply_cut_off_half_way_is_finished_by_the_next_attempt(
    user: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "old.md").write_text("old\n")
    _coder_may_run_shell()
    session = session_in("coder", user, workspace=ws)
    job = job_create(session=session, request="notes", user=user)
    context = tool_context(job, session, [])
    real = applymoves._put
    moved: list[str] = []

    def put_then_die(fs: Any, source: int, parents: Any, op: list[Any], **kw: Any) -> None:
        if len(moved) == 50:
            raise _Killed
        real(fs, source, parents, op, **kw)
        moved.append(op[2])

    monkeypatch.setattr(applymoves, "_put", put_then_die)
    from roles.registry import registry
    from sessions_app.agent.executor import tool_execute

    registry.sync()
    with pytest.raises(_Killed):
        tool_execute(
            session=session, role=registry.get("coder"), tool="execute_command",
            arguments={"argv": ["sh", "-c", WRITE_MANY.replace(str(FILES), "200")
                                + "; rm notes/old.md"]},
            actor="job:t", context=context, job=job,
        )  # fmt: skip
    monkeypatch.setattr(applymoves, "_put", real)
    assert PendingChange.objects.filter(session=session).count() == 201  # all recorded
    assert len(os.listdir(ws / "notes")) == 50  # half moved (old.md deleted first)
    tool_context(Job.objects.get(pk=job.pk), session, [])  # the next attempt starts
    assert not WorkspaceApply.objects.exists()
    assert sorted(os.listdir(ws / "notes")) == sorted(f"n{i}.md" for i in range(200))
    assert (ws / "notes" / "n199.md").read_text() == "note 199\n"
    assert not [n for n in os.listdir(ws) if n.startswith(".acode-staging-")]
