"""Self-correction inside a step (issue 39), through the run engine with scripted models:
failing tests go back to the Coder with their output until the template's attempts are
spent, then the step is blocked and a person decides; a Coder that writes nothing is tried
once more, then fails fast; a Planner's answer that is not a plan is tried once more with
the refusal shown."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from sessions_app.models import AuditEvent, Job, RunQuestion, RunStatus, WorkflowTemplate
from sessions_app.services.runs import engine, run_answer, run_start
from sessions_app.services.sessions import session_create
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import (
    FIRST,
    PLAN_ONE_STEP,
    SECOND,
    calls,
    drive,
    history,
    review,
    script_tester,
)

pytestmark = pytest.mark.django_db

TEST_GREET = "from greet import greet\n\n\ndef test_greet():\n    assert greet('ann') == 'hi ann'\n"
APPROVE = review("approve", "looks right")


def _session(owner: User) -> Any:
    return session_create(owner=owner, title="self-correction", task="greeting")


def _coder(*jobs: list[dict[str, Any]]) -> None:
    scripted_model("coder", list(jobs), name="coder-attempts")


def first_try() -> list[dict[str, Any]]:
    """greet() without the name its test passes: the test fails."""
    return calls(
        ("create_file", {"path": "test_greet.py", "content": TEST_GREET}),
        ("create_file", {"path": "greet.py", "content": FIRST}),
        final="created",
    )


def rewrite(content: str) -> list[dict[str, Any]]:
    return calls(("write_file", {"path": "greet.py", "content": content}), final="rewrote")


def _medium(user: User) -> Any:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [APPROVE])
    return drive(
        run_start(session=_session(user), request="Add a greeting helper", user=user, risk="medium")
    )


def _coder_requests(run: Any) -> list[str]:
    jobs = Job.objects.filter(session=run.session, role__slug="coder").order_by("created_at")
    return [job.request for job in jobs]


def test_a_failing_test_goes_back_to_the_coder_and_is_fixed_on_the_second_attempt(
    user: User, client: Client
) -> None:
    _coder(first_try(), rewrite(SECOND))
    run = _medium(user)

    assert run.status == RunStatus.SUCCEEDED, run.message
    assert history(run) == [
        "Default", "Planner", "Coder", "Tester", "Coder", "Tester", "Reviewer", "Default"
    ]  # fmt: skip
    tests = list(run.stages.filter(purpose="test").order_by("seq"))
    assert [t.evidence["result"] for t in tests] == ["failed", "passed"]
    first, second = _coder_requests(run)
    assert "## The tests failed" not in first
    assert "## The tests failed: fix the code so they pass" in second
    assert "tests failed (exit 1)" in second and "test_greet" in second
    assert '<untrusted-data source="the Tester' in second  # through the one channel
    retry = run.stages.filter(purpose="code").order_by("seq").last()
    assert retry is not None and retry.revision == 0
    assert retry.reason == (
        "Executing plan step 1/1: Add a greeting helper "
        "(attempt 2 of 3; last test run: tests failed (exit 1))"
    )
    audited = AuditEvent.objects.filter(details__retry__startswith="attempt 2 of 3")
    assert audited.count() == 1
    client.force_login(user)
    api = client.get(f"/api/runs/{run.pk}/").json()
    assert any("attempt 2 of 3" in stage["reason"] for stage in api["stages"])
    page = client.get(f"/sessions/{run.session_id}/").content.decode()
    assert "attempt 2 of 3" in page


def test_a_step_whose_tests_still_fail_after_its_attempts_is_blocked_for_a_person(
    user: User,
) -> None:
    _coder(first_try(), rewrite("def greet(name):\n    return 1\n"),
           rewrite("def greet(name):\n    return 2\n"), rewrite(SECOND))  # fmt: skip
    run = _medium(user)

    assert run.status == RunStatus.BLOCKED
    assert run.message.startswith("The tests of plan step 1 still fail after 3 attempts")
    assert "tests failed (exit 1)" in run.message
    assert history(run).count("Coder") == 3 and "Reviewer" not in history(run)
    question = RunQuestion.objects.get(run=run)
    assert question.asked_by == "orchestrator" and question.stage is not None
    assert question.stage.purpose == "test" and question.stage.evidence["result"] == "failed"

    # The blocked path: a person's answer sends the step back to the Coder, with the tests.
    run = drive(run_answer(run=run, answer="greet must take a name", user=user))
    assert run.status == RunStatus.SUCCEEDED, run.message
    last = _coder_requests(run)[-1]
    assert "greet must take a name" in last and "## The tests failed" in last


def test_a_template_bounds_the_attempts_and_zero_sends_failing_tests_to_review(
    user: User, client: Client
) -> None:
    client.force_login(user)
    listed = {t["slug"]: t for t in client.get("/api/workflows/").json()}
    assert listed["medium"]["max_test_attempts"] == 3
    WorkflowTemplate.objects.filter(slug="medium").update(max_test_attempts=0)
    _coder(first_try(), rewrite(SECOND))
    run = _medium(user)
    assert run.status == RunStatus.SUCCEEDED
    assert history(run) == ["Default", "Planner", "Coder", "Tester", "Reviewer", "Default"]


def test_a_coder_that_writes_nothing_is_told_and_tried_once_more_then_fails_fast(
    user: User,
) -> None:
    _coder(calls(final="I would add greet()."), calls(final="Still thinking about greet()."))
    run = drive(run_start(session=_session(user), request="Add a greeting helper", user=user))

    assert run.status == RunStatus.FAILED and run.error_code == "ACODE-JOB-009"
    assert "changed nothing" in run.message and "retried once with a note" in run.message
    stages = list(run.stages.order_by("seq").values_list("purpose", "status", "reason"))
    assert [s[:2] for s in stages] == [("code", "failed"), ("code", "failed")]
    assert stages[1][2].endswith("(retry: the Coder's last try wrote nothing)")
    first, second = _coder_requests(run)
    assert "## Your last try wrote nothing" not in first
    assert "## Your last try wrote nothing" in second


def test_a_coder_that_writes_on_its_retry_goes_on(user: User) -> None:
    _coder(calls(final="I would add greet()."), calls(("create_file", {"path": "g.py",
           "content": FIRST})))  # fmt: skip
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [APPROVE])
    run = drive(run_start(session=_session(user), request="Add a greeting helper", user=user))
    assert run.status == RunStatus.SUCCEEDED, run.message
    assert list(run.stages.values_list("purpose", "status").order_by("seq"))[:3] == [
        ("code", "failed"), ("code", "succeeded"), ("test", "succeeded")
    ]  # fmt: skip


def test_an_answer_identical_to_the_last_no_progress_answer_fails_at_once(
    user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "NO_WRITE_RETRIES", 3)
    _coder(calls(final="Here is the code: def greet(): ..."))  # every job answers alike
    run = drive(run_start(session=_session(user), request="Add a greeting helper", user=user))
    assert run.status == RunStatus.FAILED and run.error_code == "ACODE-JOB-009"
    assert "answered exactly as the try before" in run.message
    assert run.stages.filter(purpose="code").count() == 2  # not 4: no progress fails fast


def test_a_malformed_plan_is_tried_once_more_with_the_refusal_shown(user: User) -> None:
    scripted_model("planner", [[{"content": "I think we add a helper."}],
                               [{"content": PLAN_ONE_STEP}]])  # fmt: skip
    _coder(first_try(), rewrite(SECOND))
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [APPROVE])
    run = drive(
        run_start(session=_session(user), request="Add a greeting helper", user=user, risk="medium")
    )
    assert run.status == RunStatus.SUCCEEDED, run.message
    plans = list(run.stages.filter(purpose="plan").order_by("seq"))
    assert [p.status for p in plans] == ["failed", "succeeded"]
    assert plans[1].reason.endswith("(retry: the last answer was not a plan)")
    jobs = Job.objects.filter(session=run.session, role__slug="planner").order_by("created_at")
    assert "## Your last answer was refused" not in jobs[0].request
    assert "## Your last answer was refused" in jobs[1].request
    assert "The answer is not a plan" in jobs[1].request
    assert "I think we add a helper." in jobs[1].request


def test_a_plan_refused_twice_fails_with_its_code(user: User) -> None:
    scripted_model("planner", [[{"content": "I think we add a helper."}]])
    scripted_model("reviewer", [APPROVE])  # medium: another model than the Coder's reviews
    run = drive(
        run_start(session=_session(user), request="Add a greeting helper", user=user, risk="medium")
    )
    assert run.status == RunStatus.FAILED and run.error_code == "ACODE-JOB-008"
    assert "retried once with the refusal shown" in run.message
    assert run.stages.filter(purpose="plan").count() == 2
