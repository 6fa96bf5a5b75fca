"""A broker that is away: a person's new run or job is refused before anything is written,
and a run whose stage's job never starts is ended by its budget, not by the outage.

The broker is really unreachable here (a Redis URL on a port nobody listens on); the real
outage, with workers and runs crossing stage boundaries, is played in
``tests/sessions_app/test_runs_broker_outage.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from acode.celery import app
from acode.embedded import free_port
from sessions_app.models import AgentSession, AuditEvent, Job, JobStatus, Run, RunStatus
from sessions_app.services.runs import run_start, runs_resume_stalled
from sessions_app.services.sessions import session_create
from tests.sessions_app.apis.apikit import new_session
from tests.sessions_app.runkit import script_medium_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker_away() -> Iterator[Callable[[], None]]:
    """Point Celery at a Redis nobody runs; the fixture's value brings the real one back."""
    saved = {"broker_url": app.conf.broker_url, "task_always_eager": app.conf.task_always_eager}
    app.conf.update(broker_url=f"redis://127.0.0.1:{free_port()}/0", task_always_eager=False)

    def back() -> None:
        app.conf.update(saved)

    yield back
    back()


def test_a_run_start_refused_while_the_broker_is_away_leaves_nothing_and_goes_through_after(
    api: APIClient, broker_away: Callable[[], None]
) -> None:
    sid = new_session(api)["id"]
    audit_before = AuditEvent.objects.filter(session_id=sid).count()
    start = {"request": "Add a greeting helper", "risk": "medium"}
    key = {"HTTP_IDEMPOTENCY_KEY": "start-once"}

    refused = api.post(f"/api/sessions/{sid}/runs/", start, format="json", **key)

    assert refused.status_code == 503, refused.content
    assert refused.json()["code"] == "ACODE-API-503"
    assert "nothing was started" in refused.json()["message"]
    assert not Run.objects.filter(session_id=sid).exists()
    assert not Job.objects.filter(session_id=sid).exists()
    assert AuditEvent.objects.filter(session_id=sid).count() == audit_before
    assert AgentSession.objects.get(pk=sid).active_run_id is None

    broker_away()  # the broker is back: the same request, with the same key, goes through
    script_medium_run(reviews=[])
    again = api.post(f"/api/sessions/{sid}/runs/", start, format="json", **key)

    assert again.status_code == 201, again.content
    assert "Idempotent-Replay" not in again
    run = Run.objects.get(session_id=sid)
    assert str(run.pk) == again.json()["id"] and run.status == RunStatus.RUNNING
    assert run.stages.get().job.status == JobStatus.QUEUED


def test_a_job_refused_while_the_broker_is_away_is_not_created(
    api: APIClient, broker_away: Callable[[], None]
) -> None:
    sid = new_session(api)["id"]

    refused = api.post(f"/api/sessions/{sid}/jobs/", {"request": "hello"}, format="json")

    assert refused.status_code == 503, refused.content
    assert refused.json()["code"] == "ACODE-API-503"
    assert not Job.objects.filter(session_id=sid).exists()
    broker_away()
    again = api.post(f"/api/sessions/{sid}/jobs/", {"request": "hello"}, format="json")
    assert again.status_code == 201, again.content
    assert Job.objects.get(session_id=sid).status == JobStatus.QUEUED


def test_a_run_whose_job_never_starts_waits_until_its_budget_is_spent_then_fails(
    user: User,
) -> None:
    script_medium_run(reviews=[])
    session = session_create(owner=user, title="waits", task="t")
    run = run_start(session=session, request="Add a greeting helper", user=user, risk="medium")
    job = run.stages.get().job
    assert job is not None

    # Nobody took the job's message (the broker was away, or no worker consumes its
    # queue): the sweep leaves the run waiting while its budget lasts ...
    Run.objects.filter(pk=run.pk).update(
        created_at=timezone.now() - timedelta(seconds=run.max_seconds - 60)
    )
    runs_resume_stalled()
    run.refresh_from_db()
    job.refresh_from_db()
    assert run.status == RunStatus.RUNNING and job.status == JobStatus.QUEUED

    # ... and ends it, saying why, once the budget's wall time is spent.
    Run.objects.filter(pk=run.pk).update(
        created_at=timezone.now() - timedelta(seconds=run.max_seconds + 1)
    )
    runs_resume_stalled()
    run.refresh_from_db()
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.error_code == "ACODE-RUN-006"
    assert "never started" in job.error_message
    assert run.status == RunStatus.FAILED and run.error_code == "ACODE-RUN-006"
    assert "wall time" in run.message
    run.session.refresh_from_db()
    assert run.session.active_run is None and run.session.current_role.slug == "default"
