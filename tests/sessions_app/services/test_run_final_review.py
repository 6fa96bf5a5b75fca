"""A template's final review of the whole change (issue 39, item 5), in process: its
requested changes go to the last plan step's Coder as a revision with its findings, and
the whole change is reviewed again after that step's review approves
(``test_runs_risk_review_workers`` has the approving path on a real worker)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from sessions_app.models import Job, RunStatus, StagePurpose, WorkflowTemplate
from sessions_app.services.runs import run_start
from sessions_app.services.sessions import session_create
from tests.sessions_app.runkit import SECOND, drive, review, script_medium_run

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
