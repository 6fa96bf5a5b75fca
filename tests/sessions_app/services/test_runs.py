"""Orchestrated runs through the engine: the history a run writes, revisions with the
reviewer's findings, the approval gate, the revision bound, questions to a person."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from acode.errors import AcodeError
from sessions_app.models import (
    ApprovalStatus,
    AuditEvent,
    Job,
    RunQuestion,
    RunStatus,
    WorkflowTemplate,
)
from sessions_app.services.jobs import job_create
from sessions_app.services.runs import (
    run_after_job,
    run_answer,
    run_approve,
    run_cancel,
    run_reject,
    run_start,
)
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition
from tests.sessions_app.jobkit import scripted_model, server_write
from tests.sessions_app.runkit import (
    FIRST,
    PLAN_ONE_STEP,
    SECOND,
    branch_log,
    calls,
    drive,
    grant_approve,
    history,
    other_reviewer,
    review,
    script_medium_run,
    script_tester,
)

pytestmark = pytest.mark.django_db

REVISE = review(
    "request_changes",
    "greet must take a name",
    {"path": "greet.py", "line": 1, "body": "greet() needs a name parameter"},
)
APPROVE = review("approve", "looks right")


def _session(owner: User) -> Any:
    return session_create(owner=owner, title="runs", task="greeting")


def test_medium_run_with_one_revision_writes_the_expected_history(user: User) -> None:
    script_medium_run(reviews=[REVISE, APPROVE])
    run = run_start(
        session=_session(user), request="Add a greeting helper", user=user, risk="medium"
    )
    run = drive(run)

    assert run.status == RunStatus.SUCCEEDED, run.message
    assert history(run) == [
        "Default",
        "Planner",
        "Coder",
        "Tester",
        "Reviewer",
        "Coder",
        "Tester",
        "Reviewer",
        "Default",
    ]
    reasons = list(run.session.transitions.order_by("seq").values_list("reason", flat=True))
    assert reasons[1] == "Planning the request (medium risk)"
    assert reasons[2] == "Executing plan step 1/1: Add a greeting helper"
    assert reasons[5].startswith("Revising plan step 1/1: Add a greeting helper")
    assert reasons[-1] == "All steps complete"
    coder_jobs = Job.objects.filter(session=run.session, role__slug="coder").order_by("created_at")
    assert "greet() needs a name parameter" not in coder_jobs[0].request
    assert "greet.py:1: greet() needs a name parameter" in coder_jobs[1].request
    assert "greet must take a name" in coder_jobs[1].request
    # Committed on the session branch; nothing left pending.
    assert not run.session.pending_changes.exists()
    assert (Path(run.session.workspace) / "greet.py").read_text() == SECOND
    assert any("Add a greeting helper" in subject for subject in branch_log(run))
    run.session.refresh_from_db()
    assert run.session.active_run is None
    assert run.session.plan[0]["status"] == "done"


def test_the_tester_result_is_evidence_the_reviewer_sees(user: User) -> None:
    script_medium_run(reviews=[APPROVE])
    run = drive(
        run_start(session=_session(user), request="Add a greeting", user=user, risk="medium")
    )
    assert run.status == RunStatus.SUCCEEDED
    test_stage = run.stages.get(purpose="test")
    assert test_stage.evidence["ran"] is True
    review_job = Job.objects.get(session=run.session, role__slug="reviewer")
    assert "## Test results (evidence)" in review_job.request
    assert "pytest" in review_job.request


def test_a_reviewer_requesting_changes_every_time_blocks_the_run_and_asks_a_person(
    user: User,
) -> None:
    script_medium_run(reviews=[REVISE])
    # Each revision must change something, or the run stops for want of progress.
    scripted_model(
        "coder",
        [
            calls(("create_file", {"path": "greet.py", "content": f"v = {n}\n"}))
            if n == 0
            else calls(("write_file", {"path": "greet.py", "content": f"v = {n}\n"}))
            for n in range(5)
        ],
        name="coder-every-time",
    )
    run = drive(
        run_start(session=_session(user), request="Add a greeting", user=user, risk="medium")
    )

    assert run.status == RunStatus.BLOCKED
    assert "after 2 revisions of plan step 1" in run.message
    question = RunQuestion.objects.get(run=run)
    assert question.asked_by == "orchestrator" and question.answered_at is None
    roles = history(run)
    assert roles.count("Coder") == 3  # the first attempt and two revisions
    assert run.stages.filter(purpose="review").count() == 3


def test_a_revision_that_changes_nothing_fails_fast(user: User) -> None:
    script_medium_run(reviews=[REVISE])
    scripted_model(
        "coder",
        [
            calls(("create_file", {"path": "greet.py", "content": FIRST})),
            calls(("read_file", {"path": "greet.py"})),
        ],
        name="coder-no-progress",
    )
    run = drive(
        run_start(session=_session(user), request="Add a greeting", user=user, risk="medium")
    )
    assert run.status == RunStatus.FAILED
    assert run.error_code == "ACODE-RUN-007"
    assert history(run)[-1] == "Default"


def test_a_planner_answer_that_is_not_a_plan_fails_the_stage_with_its_own_code(
    user: User,
) -> None:
    scripted_model("planner", [[{"content": "I think we should probably add a helper."}]])
    other_reviewer()
    run = drive(
        run_start(session=_session(user), request="Add a greeting", user=user, risk="medium")
    )
    assert run.status == RunStatus.FAILED
    assert run.error_code == "ACODE-JOB-008"
    run.session.refresh_from_db()
    assert run.session.plan == []
    assert history(run) == ["Default", "Planner", "Default"]


def _high_run_at_gate(owner: User) -> Any:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("explorer", [[{"content": "greet.py does not exist yet."}]])
    scripted_model(
        "coder", [calls(("create_file", {"path": "greet.py", "content": FIRST}), final="ok")]
    )
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [APPROVE])
    run = run_start(
        session=_session(owner), request="Add a greeting helper", user=owner, risk="high"
    )
    return drive(run)


def test_a_high_run_waits_for_a_different_approver_bound_to_what_it_approves(
    user: User, django_user_model: Any
) -> None:
    starter = grant_approve(user)
    run = _high_run_at_gate(starter)
    assert run.status == RunStatus.AWAITING_APPROVAL
    assert history(run) == [
        "Default",
        "Planner",
        "Explorer",
        "Coder",
        "Tester",
        "Reviewer",
    ]
    gate = run.approvals.get(status=ApprovalStatus.PENDING)
    assert not branch_log(run) or "greeting" not in branch_log(run)[0]

    # Whoever started the run cannot approve it.
    with pytest.raises(AcodeError) as refused:
        run_approve(run=run, user=starter, digest=gate.digest)
    assert refused.value.code == "ACODE-RUN-009"

    # An approval of what was there before a further change does not count.
    approver = grant_approve(django_user_model.objects.create_user("approver", password="x"))
    # as the run itself records it: nobody else changes a session in a run
    server_write(run.session, "greet.py", "def greet():\n    return 1\n", run_id=run.pk)
    with pytest.raises(AcodeError) as stale:
        run_approve(run=run, user=approver, digest=gate.digest)
    assert stale.value.code == "ACODE-RUN-011"
    gate.refresh_from_db()
    assert gate.status == ApprovalStatus.SUPERSEDED
    fresh = run.approvals.get(status=ApprovalStatus.PENDING)
    assert fresh.digest != gate.digest

    # Someone without the permission cannot approve at all.
    nobody = django_user_model.objects.create_user("nobody", password="x")
    with pytest.raises(AcodeError) as denied:
        run_approve(run=run, user=nobody, digest=fresh.digest)
    assert denied.value.code == "ACODE-RUN-008"

    # Another approver, approving what is there now, completes it.
    run = run_approve(run=run, user=approver, digest=fresh.digest, reason="checked")
    assert run.status == RunStatus.SUCCEEDED
    assert history(run)[-1] == "Default"
    assert not run.session.pending_changes.exists()
    assert branch_log(run)[0] == f"Run {str(run.pk)[:8]}: {run.request}"
    assert "Approved by approver, in role " in branch_log(run, body=True)[0]
    # Used once: a second approval is refused.
    with pytest.raises(AcodeError) as again:
        run_approve(run=run, user=approver, digest=fresh.digest)
    assert again.value.code == "ACODE-RUN-004"
    decisions = AuditEvent.objects.filter(session=run.session, event_type="RunDecision")
    assert {"ACODE-RUN-009", "ACODE-RUN-011", "approved"} <= set(
        decisions.values_list("result", flat=True)
    )


def test_an_expired_approval_request_is_refused_and_renewed(
    user: User, django_user_model: Any
) -> None:
    run = _high_run_at_gate(user)
    gate = run.approvals.get(status=ApprovalStatus.PENDING)
    run.approvals.update(expires_at=timezone.now() - timedelta(seconds=1))
    approver = grant_approve(django_user_model.objects.create_user("approver", password="x"))
    with pytest.raises(AcodeError) as expired:
        run_approve(run=run, user=approver, digest=gate.digest)
    assert expired.value.code == "ACODE-RUN-010"
    fresh = run.approvals.get(status=ApprovalStatus.PENDING)
    assert run_approve(run=run, user=approver, digest=fresh.digest).status == RunStatus.SUCCEEDED


def test_rejecting_at_the_gate_ends_the_run_and_keeps_the_changes_uncommitted(
    user: User, django_user_model: Any
) -> None:
    run = _high_run_at_gate(user)
    approver = grant_approve(django_user_model.objects.create_user("approver", password="x"))
    run = run_reject(run=run, user=approver, reason="not now")
    assert run.status == RunStatus.REJECTED
    assert history(run)[-1] == "Default"
    assert run.session.pending_changes.filter(path="greet.py").exists()


def test_a_question_pauses_the_run_and_the_answer_resumes_the_waiting_stage(user: User) -> None:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model(
        "coder",
        [
            calls(("ask_human", {"question": "Which greeting language?"}), final="asked"),
            calls(("create_file", {"path": "greet.py", "content": FIRST}), final="ok"),
        ],
    )
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [APPROVE])
    run = drive(
        run_start(session=_session(user), request="Add a greeting", user=user, risk="medium")
    )
    assert run.status == RunStatus.AWAITING_INPUT
    assert "Which greeting language?" in run.message
    run.session.refresh_from_db()
    assert run.session.current_role.slug == "coder"

    run = drive(run_answer(run=run, answer="English", user=user))
    assert run.status == RunStatus.SUCCEEDED
    coder_jobs = Job.objects.filter(session=run.session, role__slug="coder").order_by("created_at")
    assert len(coder_jobs) == 2
    assert "Q: Which greeting language?\nA: English" in coder_jobs[1].request
    assert history(run).count("Coder") == 1  # the stage went on in its role


def test_answering_a_blocked_run_gives_the_coder_the_guidance(user: User) -> None:
    script_medium_run(reviews=[REVISE, REVISE, REVISE, APPROVE])
    scripted_model(
        "coder",
        [
            calls(("create_file", {"path": "greet.py", "content": "v = 0\n"})),
            *[
                calls(("write_file", {"path": "greet.py", "content": f"v = {n}\n"}))
                for n in (1, 2, 3)
            ],
        ],
        name="coder-guided",
    )
    run = drive(
        run_start(session=_session(user), request="Add a greeting", user=user, risk="medium")
    )
    assert run.status == RunStatus.BLOCKED
    run = drive(run_answer(run=run, answer="Use a name parameter, default 'world'", user=user))
    assert run.status == RunStatus.SUCCEEDED
    last_coder = Job.objects.filter(session=run.session, role__slug="coder").latest("created_at")
    assert "Use a name parameter, default 'world'" in last_coder.request


def test_while_a_run_executes_nobody_else_changes_the_role_or_starts_jobs(user: User) -> None:
    script_medium_run(reviews=[APPROVE])
    run = run_start(session=_session(user), request="Add a greeting", user=user, risk="medium")
    with pytest.raises(AcodeError) as moved:
        session_transition(session=run.session, to_role="default", reason="skip", user=user)
    assert moved.value.code == "ACODE-RUN-003"
    with pytest.raises(AcodeError) as queued:
        job_create(session=run.session, request="something else", user=user)
    assert queued.value.code == "ACODE-RUN-003"
    with pytest.raises(AcodeError) as second:
        run_start(session=run.session, request="another", user=user)
    assert second.value.code == "ACODE-RUN-002"


def test_cancelling_before_the_first_job_starts_ends_the_run_at_once(user: User) -> None:
    script_medium_run(reviews=[APPROVE])
    run = run_start(session=_session(user), request="Add a greeting", user=user, risk="medium")
    run = run_cancel(run=run, user=user)
    assert run.status == RunStatus.CANCELLED
    assert history(run) == ["Default", "Planner", "Default"]
    assert Job.objects.get(session=run.session).status == "cancelled"


def test_cancel_stops_at_the_stage_boundary_and_returns_to_default(user: User) -> None:
    from sessions_app.services.jobs import job_start

    script_medium_run(reviews=[APPROVE])
    run = run_start(session=_session(user), request="Add a greeting", user=user, risk="medium")
    planning = Job.objects.get(session=run.session)
    job_start(planning.pk)  # a worker picked the Planner's job up
    run = run_cancel(run=run, user=user)
    assert run.status == RunStatus.RUNNING and run.cancel_requested  # the Planner job runs on
    from sessions_app.services.jobs import job_finish

    job_finish(planning, "succeeded", result="(plan)")  # the job ends; the run stops there
    run_after_job(planning.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert history(run) == ["Default", "Planner", "Default"]
    assert Job.objects.filter(session=run.session).count() == 1


def test_risk_signals_raise_the_declared_tier_and_are_recorded(user: User) -> None:
    other_reviewer()
    run = run_start(
        session=_session(user), request="Store the password hash in settings.py", user=user
    )
    assert run.declared_tier == "low"
    assert run.effective_tier == "high"
    fired = {s["signal"] for s in run.signals}
    assert {"security-words", "settings-paths"} <= fired
    assert run.template.slug == "high"
    assert run.gate_required


def test_a_low_run_is_its_own_one_step_plan(user: User) -> None:
    scripted_model(
        "coder", [calls(("create_file", {"path": "greet.py", "content": FIRST}), final="ok")]
    )
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [APPROVE])
    run = drive(run_start(session=_session(user), request="Add a greeting helper", user=user))
    assert run.status == RunStatus.SUCCEEDED, run.message
    assert history(run) == ["Default", "Coder", "Tester", "Reviewer", "Default"]
    assert run.session.plan[0]["title"] == "Add a greeting helper"


def test_a_stage_cannot_spend_more_than_the_run_has_left(user: User) -> None:
    script_medium_run(reviews=[APPROVE])
    WorkflowTemplate.objects.filter(slug="medium").update(max_llm_calls=2)
    run = drive(
        run_start(session=_session(user), request="Add a greeting", user=user, risk="medium")
    )
    assert run.status == RunStatus.FAILED
    assert run.error_code in {"ACODE-RUN-006", "ACODE-JOB-001"}
    jobs = Job.objects.filter(session=run.session)
    assert sum(j.llm_calls for j in jobs) <= 2


def test_changes_to_a_sensitive_path_raise_the_tier_and_add_the_approval_gate(
    user: User,
) -> None:
    scripted_model(
        "coder",
        [calls(("create_file", {"path": "app/migrations/0002_flag.py", "content": "ops = []\n"}))],
    )
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [APPROVE])
    run = drive(run_start(session=_session(user), request="Add a feature flag", user=user))
    assert run.template.slug == "low"
    assert run.status == RunStatus.AWAITING_APPROVAL
    assert run.effective_tier == "high"
    assert any(
        s["signal"] == "migration-paths" and s["where"] == "changes of step 1" for s in run.signals
    )


def test_a_review_stage_may_use_a_different_model_endpoint(user: User) -> None:
    from roles.models import EndpointKind, ModelEndpoint
    from sessions_app.models import WorkflowStage

    script_medium_run(reviews=[review("request_changes", "never used")])
    other = ModelEndpoint.objects.create(
        name="second-engineer", kind=EndpointKind.SCRIPTED, model="other", script=[APPROVE]
    )
    WorkflowStage.objects.filter(template__slug="medium", purpose="review").update(model=other.name)
    run = drive(
        run_start(session=_session(user), request="Add a greeting", user=user, risk="medium")
    )
    assert run.status == RunStatus.SUCCEEDED
    review_job = Job.objects.get(session=run.session, role__slug="reviewer")
    assert review_job.endpoint == "scripted:second-engineer"
    coder_job = Job.objects.filter(session=run.session, role__slug="coder").first()
    assert coder_job is not None and coder_job.endpoint == "scripted:scripted-coder"
