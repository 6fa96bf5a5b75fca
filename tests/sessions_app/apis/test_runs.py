"""Orchestrated runs through the REST API: start, follow, answer, approve, reject, cancel.

The stages run in this process (``runkit.drive``, what the Celery task does) against
scripted models; everything a client does goes through the API.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from sessions_app.models import AuditEvent, Job, Run, RunStatus, WorkflowStage, WorkflowTemplate
from sessions_app.services.jobs import job_finish, job_start
from sessions_app.services.runs import run_after_job, run_start
from sessions_app.services.sessions import session_create
from tests.sessions_app import runkit
from tests.sessions_app.apis.apikit import new_session
from tests.sessions_app.jobkit import scripted_model, server_write
from tests.sessions_app.runkit import (
    FIRST,
    PLAN_ONE_STEP,
    calls,
    drive,
    grant_approve,
    review,
    script_medium_run,
)

pytestmark = pytest.mark.django_db

APPROVE = review("approve", "looks right")
REVISE = review(
    "request_changes", "greet must take a name", {"path": "greet.py", "line": 1, "body": "name?"}
)


def approver_named(django_user_model: Any, name: str = "approver") -> APIClient:
    """A team lead: sees every session and may approve runs."""
    lead = django_user_model.objects.create_user(name)
    lead.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    return client(grant_approve(lead))


def client(user: User) -> APIClient:
    api = APIClient()
    api.default_format = "json"
    api.force_authenticate(user)
    return api


@pytest.fixture
def api(user: User) -> APIClient:
    return client(user)


def start(api: APIClient, sid: str, **body: Any) -> Any:
    return api.post(f"/api/sessions/{sid}/runs/", {"request": "Add a greeting helper", **body})


def drive_api(api: APIClient, run_id: str) -> dict[str, Any]:
    drive(Run.objects.get(pk=run_id))
    response = api.get(f"/api/runs/{run_id}/")
    assert response.status_code == 200, response.content
    return dict(response.json())


def script_high_run() -> None:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("explorer", [[{"content": "greet.py does not exist yet."}]])
    scripted_model(
        "coder", [calls(("create_file", {"path": "greet.py", "content": FIRST}), final="ok")]
    )
    scripted_model("tester", [runkit.script_tester()])
    scripted_model("reviewer", [APPROVE])


def high_run_at_gate(api: APIClient) -> dict[str, Any]:
    script_high_run()
    sid = new_session(api)["id"]
    started = start(api, sid, risk="high")
    assert started.status_code == 201, started.content
    run = drive_api(api, started.json()["id"])
    assert run["status"] == "awaiting_approval", run["message"]
    return run


def test_a_medium_run_starts_and_its_detail_shows_stages_verdicts_and_evidence(
    api: APIClient,
) -> None:
    script_medium_run(reviews=[REVISE, APPROVE])
    sid = new_session(api)["id"]

    response = start(api, sid, risk="medium")

    assert response.status_code == 201, response.content
    started = response.json()
    assert started["status"] == "running"
    assert started["template"] == "medium"
    assert started["declared_tier"] == started["effective_tier"] == "medium"
    assert [(s["seq"], s["purpose"], s["role"]) for s in started["stages"]] == [
        (1, "plan", "planner")
    ]
    assert started["current_stage"]["role_name"] == "Planner"
    assert started["stages"][0]["job"] is not None
    assert started["can_cancel"] is True and started["can_answer"] is False

    run = drive_api(api, started["id"])

    assert run["status"] == "succeeded", run["message"]
    assert [s["purpose"] for s in run["stages"]] == [
        "plan",
        *["code", "test", "review"] * 2,
    ]
    assert all(s["status"] == "succeeded" and s["finished_at"] for s in run["stages"])
    plan, code, test, revise, recode, _, approve = run["stages"]
    assert plan["evidence"]["steps"] == 1 and plan["evidence"]["criteria"] == []
    assert set(plan["evidence"]["basis"]) == {"request", "role", "workspace", "pending", "plan"}
    assert code["evidence"]["changed"] == ["greet.py"]
    assert code["reason"] == "Executing plan step 1/1: Add a greeting helper"
    assert recode["revision"] == 1 and recode["reason"].startswith("Revising plan step 1/1")
    assert test["evidence"]["ran"] is True
    assert revise["verdict"] == {
        "verdict": "request_changes",
        "summary": "greet must take a name",
        "findings": [{"path": "greet.py", "line": 1, "body": "name?"}],
    }
    assert approve["verdict"]["verdict"] == "approve"
    assert run["revisions"] == 1
    assert run["current_stage"]["purpose"] == "review"
    assert run["budget"]["used_llm_calls"] > 0
    assert run["budget"]["max_llm_calls"] == 200
    assert run["finished_at"] is not None
    assert run["pending_changes"] == []  # committed on the session branch
    assert run["can_cancel"] is False and run["open_question"] is None


def test_the_starter_cannot_approve_a_stale_digest_is_refused_the_current_one_commits(
    api: APIClient, user: User, django_user_model: Any
) -> None:
    starter = client(grant_approve(user))  # may approve runs, but not this one
    run = high_run_at_gate(starter)
    assert run["pending_approval"]["digest"] == run["approvals"][-1]["digest"]
    assert run["can_approve"] is False
    assert [c["path"] for c in run["pending_changes"]] == ["greet.py"]
    digest = run["pending_approval"]["digest"]

    own = starter.post(f"/api/runs/{run['id']}/approve/", {"digest": digest})
    assert own.status_code == 403
    assert own.json()["code"] == "ACODE-RUN-009"

    approver = approver_named(django_user_model)
    assert approver.get(f"/api/runs/{run['id']}/").json()["can_approve"] is True
    # The workspace changes after approval was asked: the digest no longer matches.
    session = Run.objects.get(pk=run["id"]).session
    # (recorded as the run would: nobody else changes a session while a run executes)
    server_write(session, "greet.py", "x = 1\n", run_id=session.active_run_id)
    stale = approver.post(f"/api/runs/{run['id']}/approve/", {"digest": digest})
    assert stale.status_code == 409
    assert stale.json()["code"] == "ACODE-RUN-011"

    fresh = approver.get(f"/api/runs/{run['id']}/").json()
    assert fresh["status"] == "awaiting_approval"
    assert fresh["pending_approval"]["digest"] == stale.json()["details"]["digest"] != digest
    assert [a["status"] for a in fresh["approvals"]] == ["superseded", "pending"]

    approved = approver.post(
        f"/api/runs/{run['id']}/approve/",
        {"digest": fresh["pending_approval"]["digest"], "reason": "checked"},
    )
    assert approved.status_code == 200, approved.content
    body = approved.json()
    assert body["status"] == "succeeded"
    assert body["approvals"][-1]["decided_by"] == "approver"
    assert body["approvals"][-1]["reason"] == "checked"
    assert body["pending_approval"] is None and body["pending_changes"] == []
    decisions = AuditEvent.objects.filter(session=session, event_type="RunDecision")
    assert {"ACODE-RUN-009", "ACODE-RUN-011", "approved"} <= set(
        decisions.values_list("result", flat=True)
    )


def test_approving_needs_the_permission_and_a_digest(
    api: APIClient, django_user_model: Any
) -> None:
    run = high_run_at_gate(api)
    other_viewer = django_user_model.objects.create_user("lead")
    other_viewer.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    lead = client(User.objects.get(pk=other_viewer.pk))
    denied = lead.post(
        f"/api/runs/{run['id']}/approve/", {"digest": run["pending_approval"]["digest"]}
    )
    assert denied.status_code == 403
    assert denied.json()["code"] == "ACODE-RUN-008"
    approver = approver_named(django_user_model)
    missing = approver.post(f"/api/runs/{run['id']}/approve/", {})
    assert missing.status_code == 400
    assert "digest" in missing.json()["details"]["fields"]
    assert Run.objects.get(pk=run["id"]).status == RunStatus.AWAITING_APPROVAL


def test_a_coder_question_pauses_the_run_and_an_answer_resumes_it(api: APIClient) -> None:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model(
        "coder",
        [
            calls(("ask_human", {"question": "Which greeting language?"}), final="asked"),
            calls(("create_file", {"path": "greet.py", "content": FIRST}), final="ok"),
        ],
    )
    scripted_model("tester", [runkit.script_tester()])
    scripted_model("reviewer", [APPROVE])
    sid = new_session(api)["id"]
    run = drive_api(api, start(api, sid, risk="medium").json()["id"])

    assert run["status"] == "awaiting_input"
    assert run["can_answer"] is True
    assert run["open_question"]["question"] == "Which greeting language?"
    assert run["open_question"]["asked_by"] == "coder"
    assert run["current_stage"]["status"] == "awaiting_input"

    blank = api.post(f"/api/runs/{run['id']}/answer/", {"answer": " \u200b "})
    assert blank.status_code == 400
    answered = api.post(f"/api/runs/{run['id']}/answer/", {"answer": "English"})
    assert answered.status_code == 200, answered.content
    body = answered.json()
    assert body["status"] == "running"
    assert body["open_question"] is None
    assert body["questions"][0]["answer"] == "English"
    assert body["questions"][0]["answered_by"] == "dev"

    done = drive_api(api, run["id"])
    assert done["status"] == "succeeded", done["message"]
    again = api.post(f"/api/runs/{run['id']}/answer/", {"answer": "French"})
    assert again.status_code == 409
    assert again.json()["code"] == "ACODE-RUN-004"


def test_cancel_a_running_run_stops_it_at_the_stage_end(api: APIClient) -> None:
    script_medium_run(reviews=[APPROVE])
    sid = new_session(api)["id"]
    run_id = start(api, sid, risk="medium").json()["id"]
    planning = job_start(Job.objects.get(session_id=sid).pk)  # a worker runs the Planner's job
    assert planning is not None

    cancelled = api.post(f"/api/runs/{run_id}/cancel/")

    assert cancelled.status_code == 200, cancelled.content
    assert cancelled.json()["status"] == "running"
    assert "Cancel requested by dev" in cancelled.json()["message"]
    job_finish(planning, "succeeded", result="(plan)")  # the job ends; the run stops there
    run_after_job(planning.pk)
    run = api.get(f"/api/runs/{run_id}/").json()
    assert run["status"] == "cancelled"
    assert run["can_cancel"] is False
    again = api.post(f"/api/runs/{run_id}/cancel/")
    assert again.status_code == 409
    assert again.json()["code"] == "ACODE-RUN-004"
    session = api.get(f"/api/sessions/{sid}/").json()
    assert session["current_role"]["slug"] == "default"


def test_cancel_before_the_first_job_starts_ends_the_run_at_once(api: APIClient) -> None:
    script_medium_run(reviews=[APPROVE])
    sid = new_session(api)["id"]
    run_id = start(api, sid, risk="medium").json()["id"]
    cancelled = api.post(f"/api/runs/{run_id}/cancel/")
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    assert Job.objects.get(session_id=sid).status == "cancelled"


def test_cancel_a_waiting_run_ends_it_at_once(api: APIClient) -> None:
    run = high_run_at_gate(api)
    cancelled = api.post(f"/api/runs/{run['id']}/cancel/")
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["pending_approval"] is None


def test_reject_ends_the_run_and_keeps_the_changes_pending(
    api: APIClient, django_user_model: Any
) -> None:
    run = high_run_at_gate(api)
    no_permission = api.post(f"/api/runs/{run['id']}/reject/", {"reason": "no"})
    assert no_permission.status_code == 403
    assert no_permission.json()["code"] == "ACODE-RUN-008"
    approver = approver_named(django_user_model)
    blank = approver.post(f"/api/runs/{run['id']}/reject/", {"reason": ""})
    assert blank.status_code == 400

    rejected = approver.post(f"/api/runs/{run['id']}/reject/", {"reason": "not now"})

    assert rejected.status_code == 200, rejected.content
    body = rejected.json()
    assert body["status"] == "rejected"
    assert body["message"] == "Rejected by approver: not now"
    assert body["approvals"][-1]["status"] == "rejected"
    assert [c["path"] for c in body["pending_changes"]] == ["greet.py"]


def test_the_list_filters_by_session_and_status(api: APIClient) -> None:
    first = new_session(api)["id"]
    second = new_session(api)["id"]
    script_medium_run(reviews=[APPROVE])
    done = start(api, first, risk="medium").json()["id"]
    drive_api(api, done)
    running = start(api, second, risk="medium").json()["id"]

    everything = api.get("/api/runs/").json()
    assert everything["count"] == 2
    assert [r["id"] for r in everything["results"]] == [running, done]  # newest first
    assert everything["results"][0]["current_stage"]["purpose"] == "plan"
    assert "stages" not in everything["results"][0]

    by_session = api.get("/api/runs/", {"session": first}).json()
    assert [r["id"] for r in by_session["results"]] == [done]
    by_status = api.get("/api/runs/", {"status": "running,awaiting_input"}).json()
    assert [r["id"] for r in by_status["results"]] == [running]
    page = api.get("/api/runs/", {"limit": 1, "offset": 1}).json()
    assert [r["id"] for r in page["results"]] == [done]

    for bad in ({"status": "sleeping"}, {"session": "not-a-uuid"}):
        refused = api.get("/api/runs/", bad)
        assert refused.status_code == 400
        assert refused.json()["code"] == "ACODE-API-400"


def test_events_merge_stages_decisions_and_job_events_behind_a_cursor(api: APIClient) -> None:
    script_medium_run(reviews=[APPROVE])
    sid = new_session(api)["id"]
    run_id = start(api, sid, risk="medium").json()["id"]

    first = api.get(f"/api/runs/{run_id}/events/").json()
    assert [e["n"] for e in first["events"]] == list(range(1, first["next"] + 1))
    kinds = [e["kind"] for e in first["events"]]
    assert kinds[0] == "run" and first["events"][0]["data"]["result"] == "started"
    assert "job.status" in kinds
    assert first["events"][-1]["data"]["result"] == "stage 1 plan"

    drive(Run.objects.get(pk=run_id))
    newer = api.get(f"/api/runs/{run_id}/events/", {"after": first["next"]}).json()
    assert newer["events"][0]["n"] == first["next"] + 1
    assert newer["next"] == first["next"] + len(newer["events"])
    results = [e["data"].get("result") for e in newer["events"] if e["kind"] == "run"]
    assert results[-1] == "succeeded"
    assert any(e["kind"] == "job.tool_call" for e in newer["events"])
    times = [e["at"] for e in first["events"] + newer["events"]]
    assert times == sorted(times)
    job_events = [e for e in newer["events"] if e["kind"].startswith("job.")]
    assert all(e["data"]["job"] and e["data"]["stage"] for e in job_events)

    caught_up = api.get(f"/api/runs/{run_id}/events/", {"after": newer["next"]}).json()
    assert caught_up == {"events": [], "next": newer["next"]}
    bad = api.get(f"/api/runs/{run_id}/events/", {"after": "-1"})
    assert bad.status_code == 400


def test_runs_of_another_users_session_are_not_found(
    api: APIClient, django_user_model: Any
) -> None:
    script_medium_run(reviews=[APPROVE])
    sid = new_session(api)["id"]
    run_id = start(api, sid, risk="medium").json()["id"]
    stranger = client(grant_approve(django_user_model.objects.create_user("stranger")))

    for path in ("", "events/"):
        response = stranger.get(f"/api/runs/{run_id}/{path}")
        assert response.status_code == 404
        assert response.json()["code"] == "ACODE-API-404"
    for action, body in (
        ("answer", {"answer": "x"}),
        ("approve", {"digest": "x"}),
        ("reject", {"reason": "x"}),
        ("cancel", {}),
    ):
        response = stranger.post(f"/api/runs/{run_id}/{action}/", body)
        assert response.status_code == 404, action
    assert stranger.get("/api/runs/").json()["count"] == 0
    assert stranger.get("/api/runs/", {"session": sid}).json()["count"] == 0
    assert start(stranger, sid).status_code == 404
    assert not Run.objects.get(pk=run_id).cancel_requested


def test_starting_refuses_a_second_run_and_unknown_templates(api: APIClient) -> None:
    script_medium_run(reviews=[APPROVE])
    sid = new_session(api)["id"]
    unknown = start(api, sid, template="nope")
    assert unknown.status_code == 404
    assert unknown.json()["code"] == "ACODE-RUN-001"
    assert start(api, sid, risk="medium").status_code == 201
    second = start(api, sid)
    assert second.status_code == 409
    assert second.json()["code"] == "ACODE-RUN-002"
    for body in ({"request": ""}, {"request": "x", "risk": "extreme"}, {"risk": "low"}):
        refused = api.post(f"/api/sessions/{sid}/runs/", body)
        assert refused.status_code == 400, body


def test_an_idempotent_start_is_written_once(api: APIClient) -> None:
    script_medium_run(reviews=[APPROVE])
    sid = new_session(api)["id"]
    headers = {"HTTP_IDEMPOTENCY_KEY": "run-once"}
    first = api.post(f"/api/sessions/{sid}/runs/", {"request": "Add a greeting"}, **headers)
    again = api.post(f"/api/sessions/{sid}/runs/", {"request": "Add a greeting"}, **headers)
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replay"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert Run.objects.filter(session_id=sid).count() == 1


def _gate_runs(owner: User, count: int) -> list[Run]:
    """Runs that wait at once at an approval gate (a template of that stage alone)."""
    gate, _ = WorkflowTemplate.objects.get_or_create(
        slug="gate-only", defaults={"name": "Gate only", "risk_tier": "high"}
    )
    WorkflowStage.objects.get_or_create(template=gate, position=0, purpose="approval")
    runs = []
    for n in range(count):
        session = session_create(owner=owner, title=f"s{n}", task="t")
        runs.append(run_start(session=session, request="r", user=owner, template="gate-only"))
    return runs


def _queries(api: APIClient, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert api.get(url).status_code == 200
    return len(captured.captured_queries)


def test_the_list_and_the_detail_read_a_fixed_number_of_rows_sets(
    api: APIClient, user: User
) -> None:
    first = _gate_runs(user, 1)[0]
    api.get("/api/runs/")  # warm: the user's permissions, the role registry
    one_listed, one_detail = _queries(api, "/api/runs/"), _queries(api, f"/api/runs/{first.pk}/")
    _gate_runs(user, 4)
    Run.objects.filter(pk=first.pk).update(revisions=1)
    assert _queries(api, "/api/runs/") == one_listed
    assert _queries(api, f"/api/runs/{first.pk}/") == one_detail
