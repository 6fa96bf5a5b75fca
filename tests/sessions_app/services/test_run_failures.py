"""Failures where they happen, said in words, and the model's failures told apart from the
work's: a Coder that changes nothing fails in its own stage, a run stopped by a model loop
or budget says so and suggests a stronger model, plan steps show what really happened, a
failed Planner's answer is kept, and model failures do not make the next run riskier."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from sessions_app.models import Job, JobStatus, RunStatus
from sessions_app.services.runs import run_cancel, run_start
from sessions_app.services.sessions import session_create
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import FIRST, calls, drive, history, script_tester

pytestmark = pytest.mark.django_db

MODEL_SETTINGS = "/admin/roles/modelendpoint/"
READ_LOOP = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "x.py"}}]}] * 3


def _session(owner: User) -> Any:
    return session_create(owner=owner, title="failures", task="greeting")


def visible_text(html: str) -> str:
    """What a person reads on the page: no tags, no attributes."""
    return re.sub(r"<[^>]+>", " ", html)


def test_a_coder_stage_that_changes_nothing_fails_in_that_stage(user: User) -> None:
    scripted_model("coder", [calls(final="Here is the code: def greet(): ...")])
    scripted_model("tester", [script_tester()])
    run = drive(run_start(session=_session(user), request="Add a greeting helper", user=user))
    assert run.status == RunStatus.FAILED
    assert run.error_code == "ACODE-JOB-009"
    assert "changed nothing" in run.message and MODEL_SETTINGS in run.message
    stages = list(run.stages.order_by("seq").values_list("purpose", "status"))
    assert stages == [("code", "failed"), ("code", "failed")]  # tried again once (issue 39)
    assert history(run) == ["Default", "Coder", "Default"]  # no Tester, no ACODE-ROL-002
    run.session.refresh_from_db()
    assert [s["status"] for s in run.session.plan] == ["failed"]


def test_a_run_stopped_by_a_model_loop_says_so_in_words_and_suggests_a_stronger_model(
    user: User, client: Client
) -> None:
    scripted_model("coder", [READ_LOOP])
    run = drive(run_start(session=_session(user), request="Add a greeting helper", user=user))
    assert run.status == RunStatus.FAILED and run.error_code == "ACODE-JOB-002"
    assert run.message.startswith("The Coder stage stopped at a limit: read_file was called")
    assert MODEL_SETTINGS in run.message
    client.force_login(user)
    page = visible_text(client.get(f"/sessions/{run.session_id}/").content.decode())
    assert "limit_exceeded" not in page and "in_progress" not in page
    assert "stopped at a limit" in page and "Failed" in page
    api = client.get(f"/api/runs/{run.pk}/").json()
    assert "limit_exceeded" not in api["message"]


def test_a_run_that_spends_its_budget_says_so_and_suggests_a_stronger_model(user: User) -> None:
    scripted_model("coder", [[{"tool_calls": [{"name": "list_directory", "arguments": {}}]}] * 9])
    from sessions_app.models import WorkflowTemplate

    WorkflowTemplate.objects.filter(slug="low").update(max_llm_calls=3)
    run = drive(run_start(session=_session(user), request="Add a greeting helper", user=user))
    assert run.status == RunStatus.FAILED
    assert run.error_code in {"ACODE-JOB-001", "ACODE-JOB-002"}
    assert MODEL_SETTINGS in run.message


def test_a_failed_planners_answer_is_kept_on_the_job(user: User) -> None:
    answer = "I think we should probably add a helper."
    scripted_model("planner", [[{"content": answer}]])
    scripted_model(
        "reviewer", [[{"content": "unused"}]]
    )  # medium: another model than the Coder's reviews
    run = drive(
        run_start(session=_session(user), request="Add a greeting", user=user, risk="medium")
    )
    assert run.error_code == "ACODE-JOB-008"
    jobs = Job.objects.filter(session=run.session, role__slug="planner")  # tried again once
    assert [(j.status, j.result) for j in jobs] == [(JobStatus.FAILED, answer)] * 2


def test_model_failures_do_not_raise_the_next_runs_risk(user: User) -> None:
    session = _session(user)
    scripted_model("coder", [READ_LOOP])
    for _ in range(2):
        run = drive(run_start(session=session, request="Add a greeting helper", user=user))
        assert run.error_code == "ACODE-JOB-002"
    after_model_failures = run_start(session=session, request="Add a greeting helper", user=user)
    assert after_model_failures.effective_tier == "low"
    assert "earlier-failures" not in {s["signal"] for s in after_model_failures.signals}


def test_failures_that_are_not_the_models_still_raise_the_next_runs_risk(user: User) -> None:
    session = _session(user)
    scripted_model("coder", [[{"error": "server"}]])
    for _ in range(2):
        run = drive(run_start(session=session, request="Add a greeting helper", user=user))
        assert run.error_code == "ACODE-JOB-003"
    later = run_start(session=session, request="Add a greeting helper", user=user)
    assert later.effective_tier == "medium"
    assert "earlier-failures" in {s["signal"] for s in later.signals}


def test_a_cancelled_run_puts_its_step_back_to_pending(user: User) -> None:
    scripted_model(
        "coder", [calls(("create_file", {"path": "greet.py", "content": FIRST}), final="ok")]
    )
    run = run_start(session=_session(user), request="Add a greeting helper", user=user)
    run_cancel(run=run, user=user)
    run = drive(run)
    assert run.status == RunStatus.CANCELLED
    run.session.refresh_from_db()
    assert [s["status"] for s in run.session.plan] == ["pending"]
