"""Runs ride out a broker outage: real processes (daphne, a Celery worker with beat,
PostgreSQL, a redis-server of the test's own that is killed and started again empty).

Runs finish their code stage while Redis is down; their test stage's job cannot be sent,
waits for the broker, and is sent by the periodic re-send once Redis is back; a run whose
message Redis held is rescued by the re-send of jobs queued too long. Every run ends
succeeded, every stage once. A run start refused (503) during the outage leaves nothing
behind and goes through as soon as Redis is back.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.authtoken.models import Token

from roles.services import role_write
from sessions_app.models import (
    FINAL_JOB_STATUSES,
    AgentSession,
    Job,
    JobStatus,
    Run,
    RunStatus,
)
from tests.acode.test_faults import OwnRedis, Server, assert_json_503
from tests.conftest import needs_postgres, shared_database_url
from tests.sessions_app.test_runs_workers import (
    REQUEST,
    RUN_ROLES,
    assert_ran_once_each,
    script_slow_coder_run,
    stage_job,
    wait_run,
)
from tests.sessions_app.test_tasks import Worker, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), needs_postgres]

RUNS = 3
OUTAGE_SECONDS = 20.0


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    """A redis-server of this test's own (the machine's is shared): killed, started empty."""
    workdir = tmp_path / "redis"
    workdir.mkdir()
    redis = OwnRedis(workdir)
    yield redis
    redis.stop()


@pytest.fixture
def server(own_redis: OwnRedis, tmp_path: Path) -> Iterator[Server]:
    started = Server(
        tmp_path / "daphne.log",
        {"DATABASE_URL": shared_database_url(), "REDIS_URL": own_redis.url},
    )
    yield started
    started.stop()


@pytest.fixture
def token(django_user_model: Any) -> str:
    admin = django_user_model.objects.create_superuser("ops", "ops@example.com", "pw-ops-12345")
    return Token.objects.create(user=admin).key


@pytest.fixture
def run_queue() -> str:
    """Every role a run uses, on a queue only this test's worker consumes."""
    name = f"test-outage-{uuid.uuid4().hex[:8]}"
    for role in RUN_ROLES:
        role_write(data={"queue": name}, create=False, slug=role, actor="test")
    return name


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def lock_waiters() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"
        )
        return int(cursor.fetchone()[0])


def until(check: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.2)


def has_code_stage(run: Run) -> bool:
    return run.stages.filter(purpose="code").exclude(job=None).exists()


def waits_for_broker(job: Job) -> bool:
    return Job.objects.filter(pk=job.pk, broker_wait_since__isnull=False).exists()


def notes(job: Job) -> str:
    return str(list(job.events.filter(kind="note").values_list("data", flat=True)))


def test_runs_cross_stage_boundaries_through_a_broker_outage_and_all_succeed(
    own_redis: OwnRedis,
    server: Server,
    token: str,
    run_queue: str,
    workers: list[Worker],
    tmp_path: Path,
) -> None:
    script_slow_coder_run()  # the Coder thinks 3 s: the window to hold its run in
    redis_env = {"REDIS_URL": own_redis.url, "CELERY_BROKER_URL": own_redis.url}
    log = tmp_path / "worker.log"
    workers.append(Worker(run_queue, log, redis_env, beat=True, concurrency=RUNS))
    start = {"request": REQUEST, "risk": "medium"}
    auth = {"Authorization": f"Token {token}"}
    with httpx.Client(base_url=server.url, headers=auth, timeout=60) as api:
        sids = [
            api.post("/api/sessions/", json={"title": f"outage {n}", "task": "greet"}).json()["id"]
            for n in range(RUNS + 2)
        ]
        late_sid, lost_sid = sids.pop(), sids.pop()
        runs = []
        for sid in sids:
            started = api.post(f"/api/sessions/{sid}/runs/", json=start)
            assert started.status_code == 201, started.text
            runs.append(Run.objects.get(pk=started.json()["id"]))

        with psycopg.connect(shared_database_url()) as other:
            # Hold each run's row as soon as it entered its code stage (the worker's
            # run_advance waits for it when the Coder's job ends) and kill Redis while the
            # Coders think: their jobs end during the outage, and the runs cross into their
            # test stage with no broker once the rows are let go.
            for run in runs:
                until(partial(has_code_stage, run), 60, "the run's code stage")
                other.execute(
                    f"SELECT id FROM {Run._meta.db_table} WHERE id = %s FOR NO KEY UPDATE",
                    [run.pk],
                )
            for run in runs:  # every Coder's message taken by the worker: its job started
                stage_job(run, "code", (JobStatus.RUNNING, *FINAL_JOB_STATUSES), 60)
            # One more run, whose first message waits in Redis (the worker's slots are all
            # busy) and is lost with Redis's data: the re-send of jobs queued too long
            # (ACODE_JOB_RESEND_SECONDS, 10 s here) delivers it after the restart.
            started = api.post(f"/api/sessions/{lost_sid}/runs/", json=start)
            assert started.status_code == 201, started.text
            lost = Run.objects.get(pk=started.json()["id"])
            lost_plan = stage_job(lost, "plan", (JobStatus.QUEUED,), 10)
            own_redis.kill()
            down_at, killed_at = time.monotonic(), timezone.now()
            coding = [stage_job(run, "code", FINAL_JOB_STATUSES, 60) for run in runs]
            until(lambda: lock_waiters() >= RUNS, 30, "every run's advance to wait")
            other.rollback()
        # Jobs in flight when Redis went away finished (the last one had just started).
        assert all(c.status == JobStatus.SUCCEEDED for c in coding)
        assert any(c.finished_at and c.finished_at > killed_at for c in coding)

        # The test stages' jobs are created, stay queued and wait for the broker; no run
        # fails for it.
        testing = [stage_job(run, "test", (JobStatus.QUEUED,), 30) for run in runs]
        for job in testing:
            until(partial(waits_for_broker, job), 30, "the test job to wait for the broker")
            assert "broker_unreachable" in notes(job)

        # A run start during the outage: a clean 503, and nothing left behind.
        key = {"Idempotency-Key": "late-start"}
        refused = api.post(f"/api/sessions/{late_sid}/runs/", json=start, headers=key)
        assert_json_503(refused)
        assert not Run.objects.filter(session_id=late_sid).exists()
        assert AgentSession.objects.get(pk=late_sid).active_run_id is None

        time.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - down_at)))
        assert all(Run.objects.get(pk=r.pk).status == RunStatus.RUNNING for r in runs)
        own_redis.start()  # empty: every message it held is gone
        back_at = time.monotonic()

        # Submitted again right away (the same key): it goes through.
        again = api.post(f"/api/sessions/{late_sid}/runs/", json=start, headers=key)
        assert again.status_code == 201, again.text
        assert "Idempotent-Replay" not in again.headers
        runs.append(Run.objects.get(pk=again.json()["id"]))

    for job in testing:
        wait_for(job, (JobStatus.RUNNING, *FINAL_JOB_STATUSES), 90)
    started_after = time.monotonic() - back_at
    for run in [*runs, lost]:
        assert_ran_once_each(wait_run(run, 180), killed=None)
    assert "queued too long; message sent again" in notes(lost_plan), notes(lost_plan)
    for job in testing:
        assert "the task queue is back; message sent" in notes(job), notes(job)
        job.refresh_from_db()
        assert job.broker_wait_since is None
    print(f"test stages started {started_after:.1f}s after Redis was back")
