"""Orchestrated runs through real Celery workers: a worker killed during a stage, or
after a stage ended and before the run moved on, costs the run nothing.

The second worker (with beat, like ``make run``) requeues the lost job or resumes the run
that stopped between stages; the run ends as if nothing happened: the same history,
every stage once, every finished stage's job run once, the changes committed.

The moments are made exact by holding a lock from the test: the run's row (the worker's
``run_advance`` waits for it after the job ended) or the role registry's stamp table (the
worker's next task waits for it after taking its message from the queue).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import connection

from roles.models import RegistryStamp
from roles.services import role_write
from sessions_app.models import (
    FINAL_JOB_STATUSES,
    AuditEvent,
    Job,
    JobStatus,
    Run,
    RunStage,
    RunStatus,
    WorkflowStage,
)
from sessions_app.services.runs import run_start
from sessions_app.services.sessions import session_create
from tests.conftest import needs_postgres, shared_database_url
from tests.sessions_app import runkit
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import (
    FIRST,
    PLAN_ONE_STEP,
    branch_log,
    calls,
    history,
    review,
)
from tests.sessions_app.test_tasks import Worker, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"), reason="needs a Redis broker (make test provides one)"
    ),
]

RUN_ROLES = ("planner", "coder", "tester", "reviewer", "explorer")
EXPECTED_HISTORY = ["Default", "Planner", "Coder", "Tester", "Reviewer", "Default"]
REQUEST = "Add a greeting helper"


@pytest.fixture
def run_queue() -> str:
    """Every role a run uses, on a queue only this test's workers consume."""
    name = f"test-runs-{uuid.uuid4().hex[:8]}"
    for role in RUN_ROLES:
        role_write(data={"queue": name}, create=False, slug=role, actor="test")
    return name


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def script_slow_coder_run() -> None:
    """A medium run: a one-step plan; a Coder that thinks for 3 s before it writes
    greet.py (the window to kill its worker in); the Tester; a Reviewer that approves."""
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    slow = calls(("create_file", {"path": "greet.py", "content": FIRST}), final="created")
    slow[0]["delay"] = 3
    scripted_model("coder", [slow])
    scripted_model("tester", [runkit.script_tester()])
    scripted_model("reviewer", [review("approve", "looks right")])


def start_run(owner: User) -> Run:
    session = session_create(owner=owner, title="runs on workers", task="greeting")
    return run_start(session=session, request=REQUEST, user=owner, risk="medium")


def stage_job(run: Run, purpose: str, statuses: tuple[str, ...], timeout: float) -> Job:
    """The job of the run's ``purpose`` stage, once it is in one of ``statuses``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stage = run.stages.filter(purpose=purpose).exclude(job=None).first()
        if stage is not None:
            assert stage.job is not None
            return wait_for(stage.job, statuses, max(deadline - time.monotonic(), 0.1))
        time.sleep(0.2)
    raise AssertionError(f"the run never reached a {purpose} stage: {run.stages.all()}")


def wait_run(run: Run, timeout: float) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status != RunStatus.RUNNING:
            return run
        time.sleep(0.2)
    stages = list(run.stages.values_list("seq", "purpose", "status", "job__status"))
    raise AssertionError(f"run still running after {timeout}s: {stages}")


@contextmanager
def run_row_held(run: Run) -> Iterator[None]:
    """Hold the run's row from another connection, as a slow commit would: the engine's
    ``run_advance`` (which locks it FOR UPDATE) waits; jobs (which only reference it) do not."""
    with psycopg.connect(shared_database_url()) as other:
        other.execute(
            f"SELECT id FROM {Run._meta.db_table} WHERE id = %s FOR NO KEY UPDATE",
            [run.pk],
        )
        yield
        other.rollback()


def waiting_on_a_lock(timeout: float) -> None:
    """Wait until a backend of this database waits for a row lock (the worker's advance)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return
        time.sleep(0.1)
    raise AssertionError("no worker waited for the run's row")


def assert_ran_once_each(run: Run, *, killed: str | None) -> None:
    """What a person sees afterwards: the history of an undisturbed run, every stage once,
    one job per stage run once (the killed stage's job twice), the change committed."""
    assert run.status == RunStatus.SUCCEEDED, (run.error_code, run.message)
    assert history(run) == EXPECTED_HISTORY
    stages = list(run.stages.order_by("seq"))
    assert [s.purpose for s in stages] == ["plan", "code", "test", "review"]
    keys = Counter((s.purpose, s.plan_step, s.revision) for s in stages)
    assert max(keys.values()) == 1, keys
    assert all(s.status == "succeeded" for s in stages)
    jobs = Job.objects.filter(session=run.session)
    assert sorted(str(j.pk) for j in jobs) == sorted(str(s.job_id) for s in stages)
    attempts = {j.run_stage.purpose: j.attempts for j in jobs.select_related("run_stage")}
    assert attempts == {p: 2 if p == killed else 1 for p in attempts}, attempts
    assert all(j.status == JobStatus.SUCCEEDED for j in jobs)
    # The run's audit trail names each stage once; the file was written once.
    started = AuditEvent.objects.filter(
        session=run.session, event_type="RunEvent", result__startswith="stage "
    )
    assert started.count() == 4
    writes = AuditEvent.objects.filter(
        session=run.session, event_type="RoleAction", details__tool="create_file"
    )
    assert writes.count() == 1
    # Committed on the session branch; nothing left pending; the session is free again.
    session = run.session
    session.refresh_from_db()
    assert session.active_run is None and not session.pending_changes.exists()
    assert (Path(session.workspace) / "greet.py").read_text() == FIRST
    assert any(REQUEST in subject for subject in branch_log(run)), branch_log(run)


def test_a_run_survives_its_worker_killed_during_a_stage(
    user: User, run_queue: str, workers: list[Worker], tmp_path: Path
) -> None:
    script_slow_coder_run()
    first = Worker(run_queue, tmp_path / "first.log")
    workers.append(first)
    run = start_run(user)
    coding = stage_job(run, "code", (JobStatus.RUNNING,), 60)
    first.kill()  # during the Coder's 3 s of thought, before it wrote anything

    coding.refresh_from_db()
    assert coding.status == JobStatus.RUNNING and coding.attempts == 1
    assert list(run.stages.values_list("purpose", flat=True)) == ["plan", "code"]
    workers.append(Worker(run_queue, tmp_path / "second.log", beat=True))
    run = wait_run(run, 120)

    assert_ran_once_each(run, killed="code")
    notes = [e.data.get("message") for e in coding.events.filter(kind="note")]
    assert "worker lost; job requeued" in notes


@needs_postgres
def test_a_run_survives_its_worker_killed_between_stages(
    user: User, run_queue: str, workers: list[Worker], tmp_path: Path
) -> None:
    script_slow_coder_run()
    first = Worker(run_queue, tmp_path / "first.log")
    workers.append(first)
    run = start_run(user)
    coding = stage_job(run, "code", (JobStatus.RUNNING,), 60)
    with run_row_held(run):
        # The Coder's job ends; the worker's run_after_job waits for the run: kill it there.
        coding = wait_for(coding, FINAL_JOB_STATUSES, 30)
        waiting_on_a_lock(10)
        first.kill()

    assert coding.status == JobStatus.SUCCEEDED and coding.attempts == 1
    stages = list(RunStage.objects.filter(run=run).order_by("seq"))
    assert [(s.purpose, s.status) for s in stages] == [("plan", "succeeded"), ("code", "running")]
    workers.append(Worker(run_queue, tmp_path / "second.log", beat=True))
    run = wait_run(run, 120)

    assert_ran_once_each(run, killed=None)
    # Nothing redelivered the lost message (its visibility timeout is an hour): the sweep did.
    assert "stopped between stages" in (tmp_path / "second.log").read_text()


@needs_postgres
def test_a_run_survives_its_worker_killed_holding_the_next_stages_message(
    user: User, run_queue: str, workers: list[Worker], tmp_path: Path
) -> None:
    script_slow_coder_run()
    # The worker checks the role stamp only where it must (at each task's start).
    first = Worker(run_queue, tmp_path / "first.log", {"ACODE_REGISTRY_MAX_AGE": "3600"})
    workers.append(first)
    run = start_run(user)
    coding = stage_job(run, "code", (JobStatus.RUNNING,), 60)
    with psycopg.connect(shared_database_url()) as other:
        # The Coder's job ends and the run queues the Tester's job; the worker takes its
        # message and waits at the task's start (the registry's stamp): kill it there.
        other.execute(f"LOCK TABLE {RegistryStamp._meta.db_table} IN ACCESS EXCLUSIVE MODE")
        coding = wait_for(coding, FINAL_JOB_STATUSES, 30)
        waiting_on_a_lock(10)
        first.kill()
        other.rollback()

    testing = run.stages.get(purpose="test").job
    assert testing is not None and testing.status == JobStatus.QUEUED
    # The Tester's job stays queued until the sweep sends its message again
    # (ACODE_JOB_RESEND_SECONDS: 5 x the 2 s stale time here).
    workers.append(Worker(run_queue, tmp_path / "second.log", beat=True))
    run = wait_run(run, 60)

    assert_ran_once_each(run, killed=None)
    assert "message sent again" in json.dumps(list(testing.events.values_list("data", flat=True)))


@needs_postgres
def test_a_late_redelivery_of_a_finished_job_changes_nothing(
    user: User, run_queue: str, workers: list[Worker], tmp_path: Path
) -> None:
    """A worker killed after its job ended leaves the job's message unacknowledged; the
    broker delivers it again after its visibility timeout (ACODE_BROKER_VISIBILITY_SECONDS:
    20 s here, an hour by default), when the sweep has long moved the run on. That
    delivery leaves a log line and nothing else."""
    script_slow_coder_run()
    visibility = {"ACODE_BROKER_VISIBILITY_SECONDS": "20"}
    first = Worker(run_queue, tmp_path / "first.log", visibility)
    workers.append(first)
    run = start_run(user)
    coding = stage_job(run, "code", (JobStatus.RUNNING,), 60)
    with run_row_held(run):
        coding = wait_for(coding, FINAL_JOB_STATUSES, 30)
        waiting_on_a_lock(10)
        first.kill()
    second_log = tmp_path / "second.log"
    workers.append(Worker(run_queue, second_log, visibility, beat=True))
    run = wait_run(run, 120)
    assert_ran_once_each(run, killed=None)

    def seen() -> tuple[object, ...]:
        return (
            AuditEvent.objects.filter(session=run.session).count(),
            list(Job.objects.filter(session=run.session).values_list("pk", "status", "attempts")),
            sorted(coding.events.values_list("seq", "kind")),
            list(run.stages.values_list("seq", "status", "job_id")),
            Run.objects.filter(pk=run.pk).values_list("status", "updated_at").get(),
        )

    before = seen()
    line = f"job {coding.pk} delivered again after it ended (succeeded); skipped"
    deadline = time.monotonic() + 60
    while line not in second_log.read_text():
        assert time.monotonic() < deadline, "the message was not delivered again"
        time.sleep(0.5)
    time.sleep(2)  # the redelivered task goes on to run_after_job: let it end
    assert seen() == before
    assert_ran_once_each(run, killed=None)


def test_a_test_stages_checks_wait_for_and_run_on_the_host_validation_lanes_worker(
    user: User, run_queue: str, workers: list[Worker], tmp_path: Path
) -> None:
    """Seed 002's host-validation lane: the Tester's stage runs the template's commands,
    on a queue only a worker on a host with the services consumes. Until one starts, the
    run waits at that stage, its job saying no worker consumes the queue; then that worker
    runs the checks (no model) and the run ends as any run."""
    lane = f"{run_queue}-host"
    role_write(data={"queue": lane}, create=False, slug="tester", actor="test")
    stage = WorkflowStage.objects.get(template__slug="medium", purpose="test")
    stage.commands = [["python", "-m", "pytest", "-q", "test_greet.py"]]
    stage.save(update_fields=["commands"])
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    test = "from greet import greet\n\n\ndef test_greet():\n    assert greet() == 'hi'\n"
    scripted_model("coder", [calls(("create_file", {"path": "greet.py", "content": FIRST}),
                                   ("create_file", {"path": "test_greet.py", "content": test}))])  # fmt: skip
    scripted_model("reviewer", [review("approve", "looks right")])
    workers.append(Worker(run_queue, tmp_path / "agents.log", beat=True))
    run = start_run(user)

    checks = stage_job(run, "test", (JobStatus.QUEUED,), 60)
    deadline = time.monotonic() + 30
    while not checks.events.filter(data__warning="no_consumer", data__queue=lane).exists():
        assert time.monotonic() < deadline, list(checks.events.values_list("kind", "data"))
        time.sleep(0.2)
    time.sleep(2)
    run.refresh_from_db()
    checks.refresh_from_db()
    assert run.status == RunStatus.RUNNING and checks.status == JobStatus.QUEUED

    workers.append(Worker(lane, tmp_path / "host.log"))
    run = wait_run(run, 120)
    assert run.status == RunStatus.SUCCEEDED, (run.error_code, run.message)
    assert history(run) == EXPECTED_HISTORY
    checks.refresh_from_db()
    assert checks.llm_calls == 0 and checks.result == "python -m pytest -q test_greet.py: exit 0"
    started = checks.events.filter(data__status=JobStatus.RUNNING).get()
    assert started.data["queue"] == lane
    assert run.stages.get(purpose="test").evidence["result"] == "passed"
