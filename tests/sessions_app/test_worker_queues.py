"""Per-role worker pools: each role's jobs run in a worker on the role's queue, the worker
registry in Redis knows which queues have a live consumer, and a job on a queue nobody
consumes says so (job event, API field, dashboard)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from acode import workers as registry_module
from acode.celery import app as celery_app
from acode.workers import (
    live_workers,
    queue_has_consumer,
    queues_with_consumers,
    worker_announce,
    worker_forget,
)
from roles.services import role_write
from sessions_app.models import FINAL_JOB_STATUSES, Job, JobEventKind, JobStatus
from sessions_app.services.jobs import job_create
from tests.sessions_app.jobkit import scripted_model, session_in
from tests.sessions_app.test_tasks import Worker, wait_for

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"), reason="needs Redis (the broker and the worker registry)"
    ),
    pytest.mark.reaches_services,  # the worker registry is in Redis, database or not
]


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(autouse=True)
def _fresh_answer() -> Iterator[None]:
    # queue_has_consumer caches for 2 s per process; each test starts from Redis.
    registry_module.forget_cache()
    yield
    registry_module.forget_cache()


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def _record_for(queue: str) -> dict[str, Any]:
    found = [w for w in live_workers() if w["queues"] == [queue]]
    assert len(found) == 1, live_workers()
    return found[0]


def _running_event(job: Job) -> dict[str, Any]:
    event = job.events.filter(kind=JobEventKind.STATUS, data__status=JobStatus.RUNNING).first()
    assert event is not None, list(job.events.values_list("kind", "data"))
    return dict(event.data)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_each_role_runs_in_the_worker_pool_of_its_queue(
    user: User, pool: list[Worker], tmp_path: Path
) -> None:
    planning, coding = _name("plan"), _name("code")
    role_write(data={"queue": planning}, create=False, slug="planner", actor="test")
    role_write(data={"queue": coding}, create=False, slug="coder", actor="test")
    scripted_model("planner", [{"content": "1. Create AuthService"}])
    scripted_model("coder", [{"content": "coded it"}])
    pool.append(Worker(planning, tmp_path / "planning.log"))
    pool.append(Worker(coding, tmp_path / "coding.log"))
    # Each worker announced itself, with exactly its queue, before it said "ready".
    planner_worker, coder_worker = _record_for(planning), _record_for(coding)
    assert planner_worker["hostname"] != coder_worker["hostname"]
    assert {planning, coding} <= queues_with_consumers()
    assert queue_has_consumer(planning) and queue_has_consumer(coding)

    plan_job = job_create(
        session=session_in("planner", user, plan=False), request="plan it", user=user
    )
    code_job = job_create(session=session_in("coder", user), request="code it", user=user)
    for job, log in ((plan_job, "planning.log"), (code_job, "coding.log")):
        wait_for(job, FINAL_JOB_STATUSES, 60)
        assert job.status == JobStatus.SUCCEEDED, (
            job.error_code,
            job.error_message,
            (tmp_path / log).read_text()[-3000:],
        )
    assert plan_job.result == "1. Create AuthService" and code_job.result == "coded it"
    assert _running_event(plan_job) == {
        "status": "running",
        "attempt": 1,
        "worker": planner_worker["hostname"],
        "queue": planning,
    }
    assert _running_event(code_job)["worker"] == coder_worker["hostname"]
    assert _running_event(code_job)["queue"] == coding
    for job in (plan_job, code_job):
        assert not job.events.filter(kind=JobEventKind.NOTE, data__warning="no_consumer").exists()

    # A worker that shuts down leaves the registry at once, not when its key expires.
    pool.pop(0).stop()
    assert planning not in queues_with_consumers()
    assert coding in queues_with_consumers()


@pytest.mark.django_db(transaction=True)
def test_job_on_a_queue_nobody_consumes_says_so(user: User, api: APIClient, client: Client) -> None:
    nowhere = _name("nobody")
    role_write(data={"queue": nowhere}, create=False, slug="explorer", actor="test")
    session = session_in("explorer", user)
    job = job_create(session=session, request="look around", user=user)

    notes = [e.data for e in job.events.filter(kind=JobEventKind.NOTE)]
    assert notes == [
        {
            "warning": "no_consumer",
            "queue": nowhere,
            "message": f"No worker is consuming queue '{nowhere}'; the job waits until one starts.",
        }
    ]
    detail = api.get(f"/api/jobs/{job.pk}/").json()
    assert detail["status"] == "queued" and detail["queue_consumed"] is False
    assert detail["events"][-1]["data"]["warning"] == "no_consumer"

    client.force_login(user)
    html = client.get(f"/sessions/{session.pk}/").content.decode()
    panel = html.split('id="session-jobs"')[1].split("</section>")[0]
    warning = panel.split('class="job-warning"')[1].split("</p>")[0]
    assert f"No worker is consuming queue <code>{nowhere}</code>" in warning

    # Once a worker consumes the queue, the job no longer warns (it would be picked up).
    hostname = _name("late") + "@test"
    worker_announce(hostname=hostname, queues=[nowhere])
    try:
        registry_module.forget_cache()
        assert api.get(f"/api/jobs/{job.pk}/").json()["queue_consumed"] is True
        html = client.get(f"/sessions/{session.pk}/").content.decode()
        assert 'class="job-warning"' not in html  # the event history still has the note
    finally:
        worker_forget(hostname=hostname)


@pytest.mark.django_db
def test_finished_job_has_no_queue_verdict(user: User, api: APIClient) -> None:
    job = job_create(session=session_in("explorer", user), request="x", user=user)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED)
    assert api.get(f"/api/jobs/{job.pk}/").json()["queue_consumed"] is None


def test_worker_record_expires_with_its_ttl() -> None:
    queue, hostname = _name("ttl"), _name("short") + "@test"
    worker_announce(hostname=hostname, queues=[queue], pid=4242, ttl=0.5)
    record = _record_for(queue)
    assert record["hostname"] == hostname and record["pid"] == 4242
    assert record["seen_at"] == pytest.approx(time.time(), abs=5)
    assert queue in queues_with_consumers()
    time.sleep(0.8)
    assert queue not in queues_with_consumers()
    assert hostname not in {w["hostname"] for w in live_workers()}


def test_queue_answer_is_cached_briefly() -> None:
    queue, hostname = _name("cached"), _name("w") + "@test"
    assert not queue_has_consumer(queue)
    worker_announce(hostname=hostname, queues=[queue])
    try:
        assert not queue_has_consumer(queue), "served from the 2-second cache"
        registry_module.forget_cache()
        assert queue_has_consumer(queue)
    finally:
        worker_forget(hostname=hostname)
    assert queue not in queues_with_consumers()


def test_every_queue_counts_as_consumed_when_tasks_run_eagerly() -> None:
    before = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        assert queue_has_consumer(_name("anything"))
    finally:
        celery_app.conf.task_always_eager = before


@pytest.mark.django_db
def test_worker_queues_command_lists_every_role_queue_the_default_and_search(
    capsys: pytest.CaptureFixture[str],
) -> None:
    special = _name("special")
    role_write(data={"queue": special}, create=False, slug="reviewer", actor="test")
    call_command("acode_worker_queues")
    assert capsys.readouterr().out.strip() == ",".join(sorted({"agents", "search", special}))
    call_command("acode_worker_queues", only=f" {special} ")
    assert capsys.readouterr().out.strip() == special


@pytest.mark.django_db
def test_worker_queues_command_refuses_an_unknown_queue() -> None:
    with pytest.raises(CommandError) as refused:
        call_command("acode_worker_queues", only="agents,agnets")
    assert "unknown queue(s) agnets" in str(refused.value)
    assert "configured queues are agents, search" in str(refused.value)
