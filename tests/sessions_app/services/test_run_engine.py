"""The run engine moves a run in one place, with its session locked once per advance."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.agent.loop import run_job
from sessions_app.models import AgentSession, RunStatus
from sessions_app.services.runs import run_after_job, run_start
from sessions_app.services.sessions import session_create
from tests.conftest import RUN_ON_POSTGRES
from tests.sessions_app.runkit import script_medium_run

pytestmark = pytest.mark.django_db


def _session_locks(queries: CaptureQueriesContext) -> list[str]:
    table = AgentSession._meta.db_table
    return [
        q["sql"]
        for q in queries.captured_queries
        if "FOR UPDATE" in q["sql"] and f'FROM "{table}"' in q["sql"]
    ]


def test_an_advance_after_a_job_locks_the_session_once(user: User) -> None:
    if connection.vendor != "postgresql":
        pytest.skip(f"SQLite has no row locks (FOR UPDATE); {RUN_ON_POSTGRES}")
    script_medium_run(reviews=[])
    session = session_create(owner=user, title="lock once")
    run = run_start(session=session, request="Add a greeting helper", user=user, risk="medium")
    stage = run.stages.get()
    run_job(stage.job_id)
    with CaptureQueriesContext(connection) as queries:
        run_after_job(stage.job_id)  # the planner's stage closes; the coder's starts
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    assert [s.purpose for s in run.stages.order_by("seq")] == ["plan", "code"]
    assert len(_session_locks(queries)) == 1
