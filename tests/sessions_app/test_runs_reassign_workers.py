"""Reassign when blocked and a different reviewer (issue 39) through a real Celery worker:
a step blocked after its 3 attempts moves to the Coder role's fallback model, which
passes; a review the Coder's model would make is refused (before the run starts, and when
the Coder was moved onto the reviewer's model); at the gate the person who started the run
cannot approve it (``services/test_run_reassign.py`` has every path in process)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from acode.errors import AcodeError
from sessions_app.models import ApprovalStatus, Run, RunStatus, WorkflowStage
from sessions_app.services.runs import run_approve, run_start
from sessions_app.services.sessions import session_create
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import (
    PLAN_ONE_STEP,
    SECOND,
    grant_approve,
    history,
    review,
    script_tester,
)
from tests.sessions_app.services.test_run_reassign import endpoint, reassign, three_failing_tries
from tests.sessions_app.services.test_run_selfcorrect import TEST_GREET, rewrite
from tests.sessions_app.test_runs_workers import run_queue, wait_run, workers  # noqa: F401
from tests.sessions_app.test_tasks import Worker

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"), reason="needs a Redis broker (make test provides one)"
    ),
]

REQUEST = "Add a greeting helper"


def _start(user: User, risk: str) -> Run:
    session = session_create(owner=user, title="reassign on a worker", task="greeting")
    return run_start(session=session, request=REQUEST, user=user, risk=risk)


def test_blocked_after_three_attempts_and_moved_to_the_fallback_model_which_succeeds(
    user: User,
    run_queue: str,  # noqa: F811
    workers: list[Worker],  # noqa: F811
    tmp_path: Path,
) -> None:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    three_failing_tries()
    endpoint("coder-fallback", rewrite(SECOND))
    reassign("coder", "coder-fallback")
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [review("approve", "looks right")])
    workers.append(Worker(run_queue, tmp_path / "worker.log"))

    run = wait_run(_start(user, "medium"), 240)
    assert run.status == RunStatus.SUCCEEDED, run.message
    assert history(run).count("Coder") == 4 and history(run)[-2:] == ["Reviewer", "Default"]
    codes = list(run.stages.filter(purpose="code").order_by("seq"))
    assert [c.model for c in codes] == ["", "", "", "coder-fallback"]
    assert "(reassigned to model coder-fallback from coder-a after 3 attempts" in codes[3].reason
    assert codes[3].job is not None and codes[3].job.model_override == "coder-fallback"


def test_a_review_on_the_authors_model_is_refused(
    user: User,
    run_queue: str,  # noqa: F811
    workers: list[Worker],  # noqa: F811
    tmp_path: Path,
) -> None:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    three_failing_tries()
    scripted_model("tester", [script_tester()])
    endpoint("shared", rewrite(SECOND))  # the Coder's fallback, and the Reviewer's model
    scripted_model("reviewer", [review("approve", "looks right")])

    # A review stage whose own model is the Coder's: the run does not start.
    review_stage = WorkflowStage.objects.filter(template__slug="medium", purpose="review")
    review_stage.update(model="coder-a")
    with pytest.raises(AcodeError) as refused:
        _start(user, "medium")
    assert refused.value.code == "ACODE-RUN-013" and not Run.objects.exists()

    # The Coder moved onto the review's model: the review is refused, the run fails.
    review_stage.update(model="shared")
    reassign("coder", "shared")
    workers.append(Worker(run_queue, tmp_path / "worker.log"))
    run = wait_run(_start(user, "medium"), 240)
    assert run.status == RunStatus.FAILED and run.error_code == "ACODE-RUN-013", run.message
    assert "a model other than the Coder's (shared)" in run.message
    assert not run.stages.filter(purpose="review").exists()


def test_gate_approval_by_the_runs_author_is_refused(
    user: User,
    django_user_model: type[User],
    run_queue: str,  # noqa: F811
    workers: list[Worker],  # noqa: F811
    tmp_path: Path,
) -> None:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("explorer", [[{"content": "greet.py does not exist yet."}]])
    writes = [("test_greet.py", TEST_GREET), ("greet.py", SECOND)]
    scripted_model("coder", [[
        *({"tool_calls": [{"name": "create_file", "arguments": {"path": p, "content": c}}]}
          for p, c in writes),
        {"content": "created"},
    ]])  # fmt: skip
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [review("approve", "looks right")])
    workers.append(Worker(run_queue, tmp_path / "worker.log"))
    author = grant_approve(user)

    run = wait_run(_start(author, "high"), 240)
    assert run.template.review_model_differs and run.status == RunStatus.AWAITING_APPROVAL
    gate = run.approvals.get(status=ApprovalStatus.PENDING)
    with pytest.raises(AcodeError) as refused:
        run_approve(run=run, user=author, digest=gate.digest)
    assert refused.value.code == "ACODE-RUN-009"
    assert "You started this run, so you cannot approve it" in refused.value.message
    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_APPROVAL

    approver = grant_approve(django_user_model.objects.create_user("approver", password="x"))
    run = run_approve(run=run, user=approver, digest=gate.digest, reason="checked")
    assert run.status == RunStatus.SUCCEEDED, run.message
