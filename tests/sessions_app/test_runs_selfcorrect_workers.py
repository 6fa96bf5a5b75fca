"""Self-correction inside a step (issue 39) through a real Celery worker: the Tester's
failing output goes back to the Coder, whose second attempt passes, and the run ends as
it would in process (``services/test_run_selfcorrect.py`` has every path in process)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from sessions_app.models import Job, RunStatus
from sessions_app.services.runs import run_start
from sessions_app.services.sessions import session_create
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import PLAN_ONE_STEP, SECOND, history, review, script_tester
from tests.sessions_app.services.test_run_selfcorrect import first_try, rewrite
from tests.sessions_app.test_runs_workers import run_queue, wait_run, workers  # noqa: F401
from tests.sessions_app.test_tasks import Worker

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"), reason="needs a Redis broker (make test provides one)"
    ),
]


def test_failing_tests_go_back_to_the_coder_on_a_real_worker(
    user: User,
    run_queue: str,  # noqa: F811
    workers: list[Worker],  # noqa: F811
    tmp_path: Path,
) -> None:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("coder", [first_try(), rewrite(SECOND)])
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [review("approve", "looks right")])
    workers.append(Worker(run_queue, tmp_path / "worker.log"))
    session = session_create(owner=user, title="self-correction", task="greeting")
    run = run_start(session=session, request="Add a greeting helper", user=user, risk="medium")

    run = wait_run(run, 180)
    assert run.status == RunStatus.SUCCEEDED, run.message
    assert history(run) == [
        "Default", "Planner", "Coder", "Tester", "Coder", "Tester", "Reviewer", "Default"
    ]  # fmt: skip
    second = Job.objects.filter(session=run.session, role__slug="coder").latest("created_at")
    assert "## The tests failed: fix the code so they pass" in second.request
    assert "tests failed (exit 1)" in second.request
