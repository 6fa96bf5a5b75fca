"""Risk as seed 002 scores it, stage reuse, what the Reviewer sees and the role's reasoning
effort (issue 39, items 4 and 5), each through a real Celery worker with scripted models:

- a medium-risk run whose plan and changes touch a settings file stops at the gate (a
  sensitive path opens it at medium), with each signal, its score and the run's score on
  the API and the page;
- a run started again with the same request on the same workspace reuses the first run's
  completed plan stage (no second Planner job), and says so;
- the review stage is asked with the run's request and the step's acceptance criteria, and
  a template with a final review reviews the whole change once more;
- a role's reasoning effort reaches the model server in the request body.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from roles.models import EndpointKind, ModelEndpoint
from roles.services import role_write
from sessions_app.models import Job, RunStatus, StagePurpose, WorkflowTemplate
from sessions_app.services.runs import run_start
from sessions_app.services.sessions import session_create
from tests.fake_openai import fake_openai
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import FIRST, PLAN_ONE_STEP, calls, history, review, script_tester
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
CRITERIA = ["greet() returns 'hi'", "greet.py has no other change"]
PLAN_WITH_CRITERIA = json.dumps(
    {
        "complexity": "low",
        "risks": ["callers may expect a name argument"],
        "steps": [
            {"title": "Add a greeting helper", "files": ["greet.py"], "acceptance": CRITERIA}
        ],
    }
)


def _start(user: User, request: str = REQUEST, risk: str = "medium", session: Any = None) -> Any:
    session = session or session_create(owner=user, title="issue 39", task="greeting")
    return run_start(session=session, request=request, user=user, risk=risk)


def _api(user: User, run: Any) -> dict[str, Any]:
    client = Client()
    client.force_login(user)
    response = client.get(f"/api/runs/{run.pk}/")
    assert response.status_code == 200, response.content
    return dict(response.json())


def test_a_medium_run_touching_a_settings_file_stops_at_the_gate(
    user: User,
    run_queue: str,  # noqa: F811
    workers: list[Worker],  # noqa: F811
    tmp_path: Path,
) -> None:
    plan = '{"steps": [{"title": "Turn on debug", "files": ["settings.py"]}]}'
    scripted_model("planner", [[{"content": plan}]])
    write = ("create_file", {"path": "settings.py", "content": "DEBUG = True\n"})
    scripted_model("coder", [calls(write, final="created")])
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [review("approve", "looks right")])
    workers.append(Worker(run_queue, tmp_path / "worker.log"))
    run = _start(user, request="Turn on debug mode")
    assert (run.effective_tier, run.gate_required) == ("medium", False)  # nothing sensitive yet

    run = wait_run(run, 180)
    assert run.status == RunStatus.AWAITING_APPROVAL, run.message
    assert run.effective_tier == "medium" and run.gate_required
    fired = {(s["signal"], s["where"]): s for s in run.signals}
    settings_hit = fired[("settings-paths", "plan")]
    assert settings_hit["sensitive"] and settings_hit["score"] == 1
    assert ("settings-paths", "changes of step 1") in fired
    # Declared medium (3) + settings-paths (1, counted once) + the autonomy signal (1).
    assert ("unattended", "template") in fired
    assert run.risk_score == 5

    data = _api(user, run)
    assert data["risk_score"] == 5 and data["gate_required"] is True
    shown = [s for s in data["signals"] if s["signal"] == "settings-paths"]
    assert shown and all(s["sensitive"] and s["score"] == 1 for s in shown)
    client = Client()
    client.force_login(user)
    page = client.get(f"/sessions/{run.session_id}/").content.decode()
    assert 'data-risk-score="5"' in page and 'data-signal="settings-paths"' in page
    assert "+1; sensitive" in page


def test_a_run_started_again_reuses_the_completed_plan_stage(
    user: User,
    run_queue: str,  # noqa: F811
    workers: list[Worker],  # noqa: F811
    tmp_path: Path,
) -> None:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    nothing = [{"content": "I looked and changed nothing."}]
    create = calls(("create_file", {"path": "greet.py", "content": FIRST}), final="created")
    scripted_model("coder", [nothing, nothing, create])  # the first run: wrote nothing, twice
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [review("approve", "looks right")])
    workers.append(Worker(run_queue, tmp_path / "worker.log"))
    first = wait_run(_start(user), 180)
    assert (first.status, first.error_code) == (RunStatus.FAILED, "ACODE-JOB-009")

    second = wait_run(_start(user, session=first.session), 180)
    assert second.status == RunStatus.SUCCEEDED, second.message
    planned = second.stages.get(purpose=StagePurpose.PLAN)
    assert planned.job_id is None  # nothing ran: the first run's plan was reused
    assert planned.reason.startswith(f"Reused the plan of run {str(first.pk)[:8]} (stage 1)")
    assert planned.evidence["reused_from"] == {"run": str(first.pk), "seq": 1}
    assert Job.objects.filter(session=first.session, role__slug="planner").count() == 1
    assert history(second)[-5:] == ["Planner", "Coder", "Tester", "Reviewer", "Default"]
    data = _api(user, second)
    assert data["stages"][0]["evidence"]["reused_from"]["run"] == str(first.pk)


def test_the_review_sees_the_request_and_criteria_and_a_final_review_sees_the_whole(
    user: User,
    run_queue: str,  # noqa: F811
    workers: list[Worker],  # noqa: F811
    tmp_path: Path,
) -> None:
    WorkflowTemplate.objects.filter(slug="medium").update(final_review=True)
    scripted_model("planner", [[{"content": PLAN_WITH_CRITERIA}]])
    create = calls(("create_file", {"path": "greet.py", "content": FIRST}), final="created")
    scripted_model("coder", [create])
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [review("approve", "step ok"), review("approve", "whole ok")])
    workers.append(Worker(run_queue, tmp_path / "worker.log"))

    run = wait_run(_start(user), 180)
    assert run.status == RunStatus.SUCCEEDED, run.message
    reviews = list(run.stages.filter(purpose=StagePurpose.REVIEW).order_by("seq"))
    assert [r.plan_step for r in reviews] == [1, 0]  # the step's review, then the whole's
    step_review, final_review = (Job.objects.get(pk=str(r.job_id)) for r in reviews)
    step_request = step_review.request
    assert f"## The whole request\n{REQUEST}" in step_request
    assert "## Acceptance criteria of this step\n- greet() returns 'hi'" in step_request
    final_request = final_review.request
    assert final_request.startswith("Review the whole change")
    assert f"## The request\n{REQUEST}" in final_request
    assert "1. Add a greeting helper\n- greet() returns 'hi'\n- greet.py has" in final_request
    assert reviews[1].reason.startswith("Reviewing the whole change")
    plan = run.stages.get(purpose=StagePurpose.PLAN).evidence
    assert plan["complexity"] == "low"
    assert plan["risks"] == ["callers may expect a name argument"]
    assert plan["criteria"] == [
        {"step": 1, "title": "Add a greeting helper", "acceptance": CRITERIA}
    ]
    assert run.session.plan[0]["acceptance"] == CRITERIA
    client = Client()
    client.force_login(user)
    page = client.get(f"/sessions/{run.session_id}/").content.decode()
    assert "low complexity" in page and "callers may expect a name argument" in page


def test_a_roles_reasoning_effort_reaches_the_model_server(
    user: User,
    run_queue: str,  # noqa: F811
    workers: list[Worker],  # noqa: F811
    tmp_path: Path,
) -> None:
    create = {
        "tool_calls": [
            {
                "id": "call-1",
                "type": "function",
                "function": {
                    "name": "create_file",
                    "arguments": json.dumps({"path": "greet.py", "content": FIRST}),
                },
            }
        ]
    }
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [review("approve", "looks right")])
    role_write(data={"reasoning_effort": "low"}, create=False, slug="reviewer", actor="test")
    with fake_openai([create, "created greet.py"]) as server:
        endpoint = ModelEndpoint.objects.create(
            name="fake-coder", kind=EndpointKind.OPENAI, base_url=server.base_url, model="fake",
            supports_json_schema=False,
        )  # fmt: skip
        role_write(
            data={"preferred_model": endpoint.name, "reasoning_effort": "high"},
            create=False, slug="coder", actor="test",
        )  # fmt: skip
        workers.append(Worker(run_queue, tmp_path / "worker.log"))
        run = wait_run(_start(user, risk="low"), 180)
    assert run.status == RunStatus.SUCCEEDED, run.message
    assert server.requests and all(body["reasoning_effort"] == "high" for body in server.requests)
    stages = {s.purpose: s.reasoning_effort for s in run.stages.all()}
    assert stages == {"code": "high", "test": "", "review": "low"}
    data = _api(user, run)
    assert [s["reasoning_effort"] for s in data["stages"]] == ["high", "", "low"]
    coder = Job.objects.get(session=run.session, role__slug="coder")
    sent = coder.events.filter(kind="llm_request").first()
    assert sent is not None and sent.data["reasoning_effort"] == "high"
