"""A template's final review of the whole change (issue 39, item 5) and reusing completed
plan and explore stages (item 4), in process: the final review's requested changes go to
the last plan step's Coder as a revision with its findings, and the whole change is
reviewed again after that step's review approves; a high run started again reuses both its
plan and the Explorer's findings (``test_runs_risk_review_workers`` has the approving
final review and a reused plan on a real worker)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from sessions_app.models import AgentSession, Job, Run, RunStatus, StagePurpose, WorkflowTemplate
from sessions_app.services.runs import run_start
from sessions_app.services.runs.stages import reusable_stage
from sessions_app.services.sessions import session_create
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import (
    FIRST,
    PLAN_ONE_STEP,
    SECOND,
    calls,
    drive,
    review,
    script_medium_run,
    script_tester,
)

pytestmark = pytest.mark.django_db

APPROVE = review("approve", "looks right")
WHOLE_REVISE = review(
    "request_changes",
    "the whole change misses a name",
    {"path": "greet.py", "line": 1, "body": "greet() should greet someone by name"},
)


def test_the_final_reviews_requested_changes_go_to_the_last_steps_coder(user: User) -> None:
    WorkflowTemplate.objects.filter(slug="medium").update(final_review=True)
    script_medium_run(reviews=[APPROVE, WHOLE_REVISE, APPROVE, APPROVE])
    session = session_create(owner=user, title="final review", task="greeting")
    run = drive(
        run_start(session=session, request="Add a greeting helper", user=user, risk="medium")
    )

    assert run.status == RunStatus.SUCCEEDED, run.message
    stages = [(s.purpose, s.plan_step, s.revision) for s in run.stages.order_by("seq")]
    assert stages == [
        (StagePurpose.PLAN, 1, 0),
        (StagePurpose.CODE, 1, 0),
        (StagePurpose.TEST, 1, 0),
        (StagePurpose.REVIEW, 1, 0),
        (StagePurpose.REVIEW, 0, 0),  # the whole change: changes requested
        (StagePurpose.CODE, 1, 1),
        (StagePurpose.TEST, 1, 1),
        (StagePurpose.REVIEW, 1, 1),
        (StagePurpose.REVIEW, 0, 0),  # the whole change again: approved
    ]
    assert run.revisions == 1
    revision = Job.objects.filter(session=session, role__slug="coder").latest("created_at")
    assert "greet.py:1: greet() should greet someone by name" in revision.request
    assert "the whole change misses a name" in revision.request
    assert not run.session.pending_changes.exists()  # committed once the whole was approved
    assert (Path(run.session.workspace) / "greet.py").read_text() == SECOND


def test_a_high_run_started_again_reuses_both_the_plan_and_the_explorers_findings(
    user: User,
) -> None:
    nothing = [{"content": "I changed nothing."}]
    create = calls(("create_file", {"path": "greet.py", "content": FIRST}), final="created")
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("explorer", [[{"content": "greet.py does not exist yet."}]])
    scripted_model("coder", [nothing, nothing, create])
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [APPROVE])
    session = session_create(owner=user, title="reuse", task="greeting")
    first = drive(
        run_start(session=session, request="Add a greeting helper", user=user, risk="high")
    )
    assert first.status == RunStatus.FAILED
    assert reusable_again(session, "Add a greeting helper")
    assert not reusable_again(session, "Add a farewell helper")  # another request plans anew

    second = drive(
        run_start(session=session, request="Add a greeting helper", user=user, risk="high")
    )
    assert second.status == RunStatus.AWAITING_APPROVAL, second.message
    reused = list(second.stages.order_by("seq")[:2])
    assert [(s.purpose, s.job_id, s.status) for s in reused] == [
        (StagePurpose.PLAN, None, "succeeded"),
        (StagePurpose.EXPLORE, None, "succeeded"),
    ]
    assert reused[1].reason.startswith("Reused the Explorer's findings of run")
    code = Job.objects.filter(session=session, role__slug="coder").latest("created_at")
    assert "greet.py does not exist yet." in code.request  # the reused findings reach it
    assert Job.objects.filter(session=session, role__slug="explorer").count() == 1
    # The second run's pending change is a new scope: a third run would plan anew.
    assert not reusable_again(session, "Add a greeting helper")


def reusable_again(session: AgentSession, request: str) -> bool:
    """Would a run of ``request`` in the session reuse its plan stage now?"""
    session.refresh_from_db()
    run = Run(session=session, request=request, template=WorkflowTemplate.objects.get(slug="high"))
    return reusable_stage(run, session, run.template.stages.get(purpose="plan")) is not None
