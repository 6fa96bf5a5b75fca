"""Reassign when blocked and a different reviewer (issue 39), through the run engine with
scripted models: a step the Coder could not finish moves to the next model its role names
(attempts count again there; none left: a person decides), and a template that requires a
review by another model than the Coder's refuses a run, or a review, without one."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from acode.errors import AcodeError
from roles.models import EndpointKind, ModelEndpoint
from roles.services import role_write
from sessions_app.models import (
    AuditEvent,
    Job,
    Run,
    RunQuestion,
    RunStatus,
    WorkflowStage,
    WorkflowTemplate,
)
from sessions_app.services.runs import run_answer, run_start
from sessions_app.services.sessions import session_create
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import (
    PLAN_ONE_STEP,
    SECOND,
    calls,
    drive,
    history,
    review,
    script_tester,
)
from tests.sessions_app.services.test_run_selfcorrect import TEST_GREET, first_try, rewrite

pytestmark = pytest.mark.django_db

APPROVE = review("approve", "looks right")
WRONG = ("def greet(name):\n    return 1\n", "def greet(name):\n    return 2\n")
THIRD = "def greet(name):\n    return 'hi ' + name\n"


def endpoint(name: str, *jobs: list[dict[str, Any]]) -> ModelEndpoint:
    return ModelEndpoint.objects.create(
        name=name, kind=EndpointKind.SCRIPTED, model="scripted-test", script=list(jobs)
    )


def reassign(role: str, *names: str) -> None:
    role_write(data={"reassign_models": list(names)}, create=False, slug=role, actor="test")


def three_failing_tries() -> None:
    """The Coder's own model: three tries at the step whose tests fail."""
    scripted_model("coder", [first_try(), rewrite(WRONG[0]), rewrite(WRONG[1])], name="coder-a")


def medium_run(user: User, *, reviews: list[Any] | None = None) -> Run:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("tester", [script_tester()])
    if reviews is not None:
        scripted_model("reviewer", reviews)
    session = session_create(owner=user, title="reassign", task="greeting")
    return drive(run_start(session=session, request="Add a greeting helper", user=user,
                           risk="medium"))  # fmt: skip


def coder_jobs(run: Run) -> list[Job]:
    return list(Job.objects.filter(session=run.session, role__slug="coder").order_by("created_at"))


def test_a_step_blocked_after_three_attempts_moves_to_the_fallback_model_which_succeeds(
    user: User, client: Client
) -> None:
    three_failing_tries()
    endpoint("coder-b", rewrite(SECOND))
    reassign("coder", "coder-b")
    run = medium_run(user, reviews=[APPROVE])

    assert run.status == RunStatus.SUCCEEDED, run.message
    assert history(run) == [
        "Default", "Planner", "Coder", "Tester", "Coder", "Tester", "Coder", "Tester",
        "Coder", "Tester", "Reviewer", "Default",
    ]  # fmt: skip
    codes = list(run.stages.filter(purpose="code").order_by("seq"))
    assert [c.model for c in codes] == ["", "", "", "coder-b"]
    assert codes[3].reason == (
        "Executing plan step 1/1: Add a greeting helper (reassigned to model coder-b from "
        "coder-a after 3 attempts; last test run: tests failed (exit 1))"
    )
    jobs = coder_jobs(run)
    assert [j.model_override for j in jobs] == ["", "", "", "coder-b"]
    assert "## The tests failed: fix the code so they pass" in jobs[3].request  # the evidence
    assert not RunQuestion.objects.filter(run=run).exists()  # nobody was asked
    moved = AuditEvent.objects.get(details__model="coder-b")
    assert moved.details["retry"].startswith("reassigned to model coder-b from coder-a")
    client.force_login(user)
    stages = client.get(f"/api/runs/{run.pk}/").json()["stages"]
    assert [s["model"] for s in stages if s["purpose"] == "code"] == ["", "", "", "coder-b"]
    page = client.get(f"/sessions/{run.session_id}/").content.decode()
    assert "reassigned to model coder-b from coder-a" in page


def test_attempts_count_again_on_the_new_model_and_a_person_decides_when_none_is_left(
    user: User,
) -> None:
    three_failing_tries()
    # A scripted endpoint replays a session's n-th job of the role: the Coder's 4th to 6th.
    wrong = [rewrite(f"def greet(name):\n    return {n}\n") for n in range(6)]
    endpoint("coder-b", *wrong)
    reassign("coder", "coder-b")
    run = medium_run(user)

    assert run.status == RunStatus.BLOCKED, run.message
    assert run.message.startswith("The tests of plan step 1 still fail after 3 attempts")
    codes = list(run.stages.filter(purpose="code").order_by("seq"))
    assert [c.model for c in codes] == ["", "", "", "coder-b", "coder-b", "coder-b"]
    assert codes[4].reason.endswith("(attempt 2 of 3; last test run: tests failed (exit 1))")
    question = RunQuestion.objects.get(run=run)
    assert question.asked_by == "orchestrator"

    # The person's answer sends the step back to the Coder, on the model it was moved to.
    ModelEndpoint.objects.filter(name="coder-b").update(script=[rewrite(SECOND)])
    scripted_model("reviewer", [APPROVE])
    run = drive(run_answer(run=run, answer="greet must take a name", user=user))
    assert run.status == RunStatus.SUCCEEDED, run.message
    last = run.stages.filter(purpose="code").order_by("seq").last()
    assert last is not None and last.model == "coder-b"


def test_a_revision_that_changed_nothing_moves_to_the_fallback_model(user: User) -> None:
    passing = [
        {"tool_calls": [{"name": "create_file", "arguments": {"path": p, "content": c}}]}
        for p, c in (("test_greet.py", TEST_GREET), ("greet.py", SECOND))
    ] + [{"content": "created"}]
    scripted_model("coder", [passing, rewrite(SECOND)], name="coder-a")
    endpoint("coder-b", rewrite(THIRD))
    reassign("coder", "coder-b")
    run = medium_run(user, reviews=[review("request_changes", "concatenate"), APPROVE])

    assert run.status == RunStatus.SUCCEEDED, run.message
    codes = list(run.stages.filter(purpose="code").order_by("seq"))
    assert [c.model for c in codes] == ["", "", "coder-b"]
    assert codes[2].reason.endswith(
        "(reassigned to model coder-b from coder-a after a revision that changed nothing)"
    )


def test_without_reassign_models_a_revision_that_changed_nothing_still_fails_fast(
    user: User,
) -> None:
    passing = [
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "greet.py", "content": c}}]}
        for c in (SECOND,)
    ] + [{"content": "created"}]
    scripted_model("coder", [passing, rewrite(SECOND)], name="coder-a")
    run = medium_run(user, reviews=[review("request_changes", "concatenate"), APPROVE])
    assert run.status == RunStatus.FAILED and run.error_code == "ACODE-RUN-007"


# -- a different reviewer -----------------------------------------------------------------


def test_the_seeded_medium_and_high_templates_require_a_different_reviewer(
    user: User, client: Client
) -> None:
    required = dict(WorkflowTemplate.objects.values_list("slug", "review_model_differs"))
    assert required == {"low": False, "medium": True, "high": True}
    client.force_login(user)
    listed = {t["slug"]: t["review_model_differs"] for t in client.get("/api/workflows/").json()}
    assert listed == required


@pytest.mark.parametrize("how", ["both default", "reviewer routed to the coder's", "stage model"])
def test_a_run_whose_review_would_use_the_authors_model_refuses_to_start(
    user: User, client: Client, how: str
) -> None:
    session = session_create(owner=user, title="reviewer", task="greeting")
    if how != "both default":
        scripted_model("coder", [first_try()], name="shared")
    if how == "reviewer routed to the coder's":
        role_write(data={"preferred_model": "shared"}, create=False, slug="reviewer", actor="t")
    if how == "stage model":
        scripted_model("reviewer", [APPROVE])
        WorkflowStage.objects.filter(template__slug="medium", purpose="review").update(
            model="shared"
        )
    with pytest.raises(AcodeError) as refused:
        run_start(session=session, request="Add a greeting helper", user=user, risk="medium")
    assert refused.value.code == "ACODE-RUN-013"
    author = "default" if how == "both default" else "shared"
    assert f"a model other than the Coder's ({author})" in refused.value.message
    assert not Run.objects.exists()

    client.force_login(user)
    api = client.post(
        f"/api/sessions/{session.pk}/runs/",
        {"request": "Add a greeting helper", "risk": "medium"},
        content_type="application/json",
    )
    assert api.status_code == 409 and api.json()["code"] == "ACODE-RUN-013"
    assert not Run.objects.exists()


def test_a_low_run_or_a_reviewer_with_a_reassign_model_of_its_own_starts(user: User) -> None:
    session = session_create(owner=user, title="reviewer", task="greeting")
    low = run_start(session=session, request="Add a greeting helper", user=user)
    assert low.template.slug == "low" and low.status == RunStatus.RUNNING

    WorkflowTemplate.objects.filter(slug="low").update(review_model_differs=True)
    endpoint("reviewer-b", APPROVE)
    reassign("reviewer", "reviewer-b")
    other = session_create(owner=user, title="reviewer 2", task="greeting")
    run = run_start(session=other, request="Add a greeting helper", user=user)
    assert run.status == RunStatus.RUNNING


@pytest.mark.parametrize("second_reviewer", [False, True])
def test_a_review_on_the_model_the_coder_was_moved_to_is_refused(
    user: User, second_reviewer: bool
) -> None:
    three_failing_tries()
    endpoint("shared", rewrite(SECOND))  # the Coder's fallback, and the Reviewer's model
    reassign("coder", "shared")
    role_write(data={"preferred_model": "shared"}, create=False, slug="reviewer", actor="t")
    if second_reviewer:
        endpoint("reviewer-b", APPROVE)
        reassign("reviewer", "reviewer-b")
    run = medium_run(user)

    review_stage = run.stages.filter(purpose="review").first()
    if not second_reviewer:
        assert run.status == RunStatus.FAILED and run.error_code == "ACODE-RUN-013"
        assert "a model other than the Coder's (shared)" in run.message
        assert review_stage is None  # never asked of the author's model
        return
    assert run.status == RunStatus.SUCCEEDED, run.message
    assert review_stage is not None and review_stage.model == "reviewer-b"
    assert review_stage.job is not None and review_stage.job.model_override == "reviewer-b"


def test_a_coder_that_wrote_nothing_twice_moves_to_the_fallback_model(user: User) -> None:
    scripted_model(
        "coder", [calls(final="I would add greet()."), calls(final="Still thinking.")],
        name="coder-a",
    )  # fmt: skip
    endpoint("coder-b", calls(("create_file", {"path": "greet.py", "content": SECOND})))
    reassign("coder", "coder-b")
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [APPROVE])
    session = session_create(owner=user, title="reassign", task="greeting")
    run = drive(run_start(session=session, request="Add a greeting helper", user=user))

    assert run.status == RunStatus.SUCCEEDED, run.message
    codes = list(run.stages.filter(purpose="code").order_by("seq"))
    assert [(c.status, c.model) for c in codes] == [
        ("failed", ""), ("failed", ""), ("succeeded", "coder-b")
    ]  # fmt: skip
    assert codes[2].reason.endswith(
        "(reassigned to model coder-b from coder-a after 2 tries that wrote nothing)"
    )
