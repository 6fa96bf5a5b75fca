from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from sessions_app.models import AgentSession, AuditEvent, RoleTransition

pytestmark = pytest.mark.django_db


def new_session(api: APIClient, **data: Any) -> dict[str, Any]:
    response = api.post(
        "/api/sessions/",
        {"title": "JWT auth", "task": "Add JWT authentication", **data},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def transition(api: APIClient, sid: str, to: str, reason: str = "because", **extra: Any) -> Any:
    return api.post(
        f"/api/sessions/{sid}/transition/",
        {"to_role": to, "reason": reason, **extra},
        format="json",
    )


def test_session_starts_in_default_with_git_workspace(api: APIClient) -> None:
    body = new_session(api)
    assert body["current_role"]["slug"] == "default"
    assert body["last_reason"] == "Initial state"
    assert body["role_version"] == 1
    assert (Path(body["workspace"]) / ".git").is_dir()


def test_session_with_existing_workspace_is_checked(api: APIClient, tmp_path: Path) -> None:
    assert new_session(api, workspace=str(tmp_path))["workspace"] == str(tmp_path)
    response = api.post(
        "/api/sessions/", {"title": "x", "workspace": str(tmp_path / "nope")}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["code"] == "ACODE-SES-002"


def test_scenario_1_and_2_roles_list_and_show(api: APIClient) -> None:
    roles = {r["name"]: r for r in api.get("/api/roles/").json()}
    assert {"Default", "Planner", "Coder", "Reviewer"} <= set(roles)
    assert roles["Planner"]["constraints"][:2] == [
        "Cannot modify files (read-only access)",
        "Cannot execute commands",
    ]
    assert roles["Coder"]["capabilities"][:2] == ["Read files", "Write files"]
    planner = api.get("/api/roles/Planner/").json()
    assert planner["description"].startswith("Task decomposition and planning")
    assert planner["prompt_component"] == "roles/planner"
    assert planner["context_strategy"] == "broad"
    assert (
        "Must not provide implementation details (focus on WHAT, not HOW)" in planner["constraints"]
    )


def test_scenario_3_current_role_and_history(api: APIClient) -> None:
    sid = new_session(api)["id"]
    response = transition(api, sid, "Planner", "Starting feature implementation")
    assert response.status_code == 200
    body = response.json()
    assert body["changed"] is True
    assert body["message"] == "Role transition: Default → Planner"
    assert body["session"]["current_role"]["name"] == "Planner"
    assert body["session"]["last_reason"] == "Starting feature implementation"
    history = api.get(f"/api/sessions/{sid}/history/").json()
    assert [(h["from_role"], h["to_role"], h["reason"]) for h in history] == [
        (None, "default", "Initial state"),
        ("default", "planner", "Starting feature implementation"),
    ]
    assert history[1]["actor"] == "dev"
    assert history[1]["role_version"] == 1


def test_scenario_6_planner_to_reviewer_is_refused_with_allowed_targets(api: APIClient) -> None:
    sid = new_session(api)["id"]
    assert transition(api, sid, "Planner", "Starting planning").status_code == 200
    response = transition(api, sid, "Reviewer", "Skipping implementation")
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "ACODE-ROL-002"
    assert "Cannot transition from Planner to Reviewer" in body["message"]
    details = body["details"]
    assert details["from_role"] == "planner" and details["to_role"] == "reviewer"
    options = {o["to_role"]: o for o in details["valid_transitions"]}
    assert options["coder"]["condition"] == "when the session has a plan"
    assert options["coder"]["allowed_now"] is False
    assert options["default"]["allowed_now"] is True
    assert details["allowed_now"] == ["explorer", "default"]
    assert "Planner → Coder (when the session has a plan)" in details["suggestion"]
    assert api.get(f"/api/sessions/{sid}/").json()["current_role"]["slug"] == "planner"
    denied = AuditEvent.objects.get(event_type="TransitionDenied")
    assert denied.target == "reviewer" and denied.result == "ACODE-ROL-002"
    # With a plan, Planner -> Coder succeeds.
    assert transition(api, sid, "Coder", "No plan yet").status_code == 409
    api.put(
        f"/api/sessions/{sid}/plan/",
        {"steps": ["Create AuthService", {"title": "Add login endpoint"}]},
        format="json",
    )
    response = transition(api, sid, "Coder", "Plan complete, starting implementation")
    assert response.status_code == 200
    assert response.json()["message"] == "Role transition: Planner → Coder"


def test_coder_to_reviewer_needs_pending_changes(api: APIClient) -> None:
    sid = new_session(api)["id"]
    transition(api, sid, "planner")
    api.put(f"/api/sessions/{sid}/plan/", {"steps": ["one"]}, format="json")
    transition(api, sid, "coder")
    refused = transition(api, sid, "reviewer")
    assert refused.status_code == 409
    assert refused.json()["details"]["unmet"] == "the session has no pending changes to review"
    change = api.post(
        f"/api/sessions/{sid}/changes/",
        {"path": "src/a.py", "kind": "created", "diff": "+x\n"},
        format="json",
    )
    assert change.status_code == 201
    assert transition(api, sid, "reviewer", "Verifying step 1").status_code == 200
    approved = api.post(f"/api/sessions/{sid}/changes/approve/", {"summary": "LGTM"}, format="json")
    assert approved.json() == {"approved": 1}
    assert api.get(f"/api/sessions/{sid}/changes/").json() == []


def test_approving_in_a_role_without_permission_is_refused(api: APIClient) -> None:
    sid = new_session(api)["id"]
    transition(api, sid, "planner")
    response = api.post(f"/api/sessions/{sid}/changes/approve/", {}, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "ACODE-ROL-003"


def test_scenario_9_transitions_and_actions_are_in_the_audit_trail(api: APIClient) -> None:
    from sessions_app.agent.loop import run_job
    from tests.sessions_app.jobkit import scripted_model

    scripted_model("planner", [{"content": '{"steps": [{"title": "Write a test file"}]}'}])
    scripted_model(
        "coder",
        [
            {
                "tool_calls": [
                    {"name": "create_file", "arguments": {"path": "test.txt", "content": ""}}
                ]
            },
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "test.txt", "content": "x" * 45}}
                ]
            },
            {"content": "done"},
        ],
    )
    sid = new_session(api)["id"]

    def agent(request: str) -> None:
        job = api.post(f"/api/sessions/{sid}/jobs/", {"request": request}, format="json").json()
        run_job(job["id"])  # what the worker does with the queued job

    transition(api, sid, "Planner", "Test audit")
    agent("Plan a simple feature")
    transition(api, sid, "Coder", "Test implementation")
    agent("Write a test file")
    transition(api, sid, "Reviewer", "Test review")
    events = api.get("/api/audit/", {"event_type": "RoleTransition"}).json()["results"]
    assert [
        (e["details"]["from_role"], e["details"]["to_role"], e["details"]["reason"])
        for e in reversed(events)
    ] == [
        ("default", "planner", "Test audit"),
        ("planner", "coder", "Test implementation"),
        ("coder", "reviewer", "Test review"),
    ]
    assert all(e["session"] == sid and e["actor"] == "dev" for e in events)
    actions = list(reversed(api.get("/api/audit/", {"event_type": "RoleAction"}).json()["results"]))
    assert [(a["role"], a["details"]["tool"], a["target"], a["result"]) for a in actions] == [
        ("coder", "create_file", "test.txt", "Success (0 bytes created)"),
        ("coder", "write_file", "test.txt", "Success (45 bytes written)"),
    ]
    assert all(a["session"] == sid for a in actions)
    last_two = api.get("/api/audit/", {"event_type": "RoleTransition", "last": 2}).json()["results"]
    assert len(last_two) == 2


def test_errors_unknown_role_missing_reason_wrong_expected(api: APIClient) -> None:
    sid = new_session(api)["id"]
    unknown = transition(api, sid, "Architect")
    assert unknown.status_code == 400 and unknown.json()["code"] == "ACODE-ROL-001"
    assert "Planner" in unknown.json()["details"]["known_roles"]
    blank = transition(api, sid, "planner", "   ")
    assert blank.status_code == 400 and blank.json()["code"] == "ACODE-ROL-007"
    missing = api.post(f"/api/sessions/{sid}/transition/", {"to_role": "planner"}, format="json")
    assert missing.status_code == 400 and missing.json()["code"] == "ACODE-API-400"
    assert "reason" in missing.json()["details"]["fields"]
    stale = transition(api, sid, "planner", "go", expected_role="coder")
    assert stale.status_code == 409 and stale.json()["code"] == "ACODE-ROL-006"
    assert RoleTransition.objects.filter(session_id=sid).count() == 1


def test_setting_the_role_in_force_writes_nothing(api: APIClient) -> None:
    sid = new_session(api)["id"]
    transition(api, sid, "planner")
    events = AuditEvent.objects.count()
    response = transition(api, sid, "PLANNER", "again")
    assert response.status_code == 200
    assert response.json()["changed"] is False
    assert "already in Planner" in response.json()["message"]
    assert AuditEvent.objects.count() == events
    assert RoleTransition.objects.filter(session_id=sid).count() == 2


def test_role_cannot_be_changed_by_patch(api: APIClient) -> None:
    sid = new_session(api)["id"]
    response = api.patch(f"/api/sessions/{sid}/", {"current_role": "coder"}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "ACODE-SES-003"
    ok = api.patch(
        f"/api/sessions/{sid}/", {"title": "Renamed", "risk_tier": "high"}, format="json"
    )
    assert ok.json()["title"] == "Renamed" and ok.json()["risk_tier"] == "high"
    assert ok.json()["current_role"]["slug"] == "default"


def test_idempotency_key_replays_first_result(api: APIClient) -> None:
    sid = new_session(api)["id"]
    headers = {"HTTP_IDEMPOTENCY_KEY": "k-1"}
    first = api.post(
        f"/api/sessions/{sid}/transition/",
        {"to_role": "planner", "reason": "go"},
        format="json",
        **headers,
    )
    again = api.post(
        f"/api/sessions/{sid}/transition/",
        {"to_role": "planner", "reason": "go"},
        format="json",
        **headers,
    )
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    assert again["Idempotent-Replay"] == "true"
    assert RoleTransition.objects.filter(session_id=sid).count() == 2
    other = api.post(
        f"/api/sessions/{sid}/transition/",
        {"to_role": "default", "reason": "x"},
        format="json",
        **headers,
    )
    assert other.status_code == 422 and other.json()["code"] == "ACODE-API-422"
    created = api.post(
        "/api/sessions/", {"title": "once"}, format="json", HTTP_IDEMPOTENCY_KEY="s-1"
    )
    replay = api.post(
        "/api/sessions/", {"title": "once"}, format="json", HTTP_IDEMPOTENCY_KEY="s-1"
    )
    assert created.json()["id"] == replay.json()["id"]
    assert AgentSession.objects.filter(title="once").count() == 1


def test_refused_transition_with_idempotency_key_is_still_audited(api: APIClient) -> None:
    sid = new_session(api)["id"]
    response = api.post(
        f"/api/sessions/{sid}/transition/",
        {"to_role": "reviewer", "reason": "x"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="deny-1",
    )
    assert response.status_code == 409
    assert AuditEvent.objects.filter(event_type="TransitionDenied", session_id=sid).count() == 1


def test_request_id_is_recorded(api: APIClient) -> None:
    sid = new_session(api)["id"]
    api.post(
        f"/api/sessions/{sid}/transition/",
        {"to_role": "planner", "reason": "go"},
        format="json",
        HTTP_X_REQUEST_ID="req-42",
    )
    assert RoleTransition.objects.get(session_id=sid, seq=2).request_id == "req-42"


def test_other_users_cannot_see_or_act_on_a_session(api: APIClient, django_user_model: Any) -> None:
    sid = new_session(api)["id"]
    stranger = APIClient()
    stranger.force_authenticate(django_user_model.objects.create_user("eve", password="pw-eve-123"))
    assert stranger.get(f"/api/sessions/{sid}/").status_code == 404
    assert transition(stranger, sid, "planner").status_code == 404
    assert stranger.get("/api/sessions/").json()["results"] == []
    lead_user = django_user_model.objects.create_user("lead", password="pw-lead-123")
    from django.contrib.auth.models import Permission

    lead_user.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    lead = APIClient()
    lead.force_authenticate(django_user_model.objects.get(pk=lead_user.pk))
    assert lead.get(f"/api/sessions/{sid}/").status_code == 200
    denied = transition(lead, sid, "planner")
    assert denied.status_code == 403 and denied.json()["code"] == "ACODE-API-403"


def test_session_list_filters(api: APIClient) -> None:
    a = new_session(api, title="Alpha login")["id"]
    new_session(api, title="Beta export")
    transition(api, a, "planner")
    assert [s["id"] for s in api.get("/api/sessions/", {"role": "Planner"}).json()["results"]] == [
        a
    ]
    assert [s["title"] for s in api.get("/api/sessions/", {"q": "export"}).json()["results"]] == [
        "Beta export"
    ]
    assert api.get("/api/sessions/", {"owner": "dev"}).json()["count"] == 2
    assert api.get("/api/sessions/", {"status": "archived"}).json()["count"] == 0


def test_plan_steps_and_errors(api: APIClient) -> None:
    sid = new_session(api)["id"]
    plan = api.put(
        f"/api/sessions/{sid}/plan/",
        {"steps": ["One", {"title": "Two", "files": ["a.py"]}]},
        format="json",
    ).json()
    assert [(s["number"], s["title"], s["status"]) for s in plan] == [
        (1, "One", "pending"),
        (2, "Two", "pending"),
    ]
    done = api.patch(f"/api/sessions/{sid}/plan/steps/1/", {"status": "done"}, format="json").json()
    assert done[0]["status"] == "done"
    assert api.get(f"/api/sessions/{sid}/").json()["plan_progress"] == {"done": 1, "total": 2}
    missing = api.patch(f"/api/sessions/{sid}/plan/steps/9/", {"status": "done"}, format="json")
    assert missing.status_code == 400 and missing.json()["code"] == "ACODE-SES-004"
    blank = api.put(f"/api/sessions/{sid}/plan/", {"steps": [{"title": " "}]}, format="json")
    assert blank.json()["code"] == "ACODE-SES-004"


def test_allowed_transitions_and_stats(api: APIClient) -> None:
    sid = new_session(api)["id"]
    allowed = {t["to_role"]: t for t in api.get(f"/api/sessions/{sid}/transitions/").json()}
    assert allowed["planner"]["allowed_now"] is True
    assert (
        allowed["coder"]["allowed_now"] is False
        and allowed["coder"]["unmet"] == "the session has no plan yet"
    )
    transition(api, sid, "planner")
    stats = api.get(f"/api/sessions/{sid}/stats/").json()
    assert {r["role"] for r in stats["roles"]} == {"default", "planner"}
    usage = api.get("/api/usage/").json()
    planner = next(r for r in usage["roles"] if r["role"] == "planner")
    assert planner["target"] == [0.15, 0.2]


def test_audit_export_jsonl_and_csv(api: APIClient) -> None:
    sid = new_session(api)["id"]
    transition(api, sid, "planner", "export me")
    jsonl = b"".join(
        api.get("/api/audit/export/", {"format": "jsonl", "session": sid}).streaming_content
    ).decode()
    rows = [json.loads(line) for line in jsonl.splitlines()]
    assert [r["event_type"] for r in rows] == ["SessionCreated", "RoleTransition"]
    text = b"".join(
        api.get("/api/audit/export/", {"format": "csv", "session": sid}).streaming_content
    ).decode()
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert parsed[1]["event_type"] == "RoleTransition"
    assert json.loads(parsed[1]["details"])["reason"] == "export me"
    assert api.get("/api/audit/export/", {"format": "xml"}).status_code == 400


def test_audit_cursor_pagination(api: APIClient) -> None:
    sid = new_session(api)["id"]
    for i in range(5):
        transition(api, sid, "planner" if i % 2 == 0 else "default", f"step {i}")
    page = api.get("/api/audit/", {"page_size": 2, "session": sid}).json()
    assert len(page["results"]) == 2 and page["next"]
    second = api.get(page["next"]).json()
    assert second["results"][0]["seq"] < page["results"][-1]["seq"]


def test_audit_chain_verifies_and_names_an_edited_row(api: APIClient, admin_user: Any) -> None:
    sid = new_session(api)["id"]
    transition(api, sid, "planner", "honest")
    transition(api, sid, "default", "back")
    boss = APIClient()
    boss.force_authenticate(admin_user)
    assert boss.get("/api/audit/verify/").json()["ok"] is True
    assert api.get("/api/audit/verify/").status_code == 403
    target = AuditEvent.objects.get(event_type="RoleTransition", details__reason="honest")
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {AuditEvent._meta.db_table} SET actor = %s WHERE id = %s",
            ["mallory", target.pk],
        )
    report = boss.get("/api/audit/verify/").json()
    assert report["ok"] is False
    assert report["first_bad_seq"] == target.seq
    assert report["first_bad_id"] == target.pk
    assert "altered" in report["problem"]


def test_audit_rows_refuse_update_and_delete(api: APIClient) -> None:
    new_session(api)
    event = AuditEvent.objects.first()
    assert event is not None
    from sessions_app.models import AppendOnlyError

    with pytest.raises(AppendOnlyError):
        event.save()
    with pytest.raises(AppendOnlyError):
        event.delete()
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.all().delete()
    with pytest.raises(AppendOnlyError):
        RoleTransition.objects.update(reason="rewritten")


def test_fast_serializers_match_their_declared_fields(api: APIClient) -> None:
    from sessions_app.apis.serializers import SessionOutput, TransitionOutput

    sid = new_session(api)["id"]
    body = transition(api, sid, "planner", "go").json()
    assert set(body["session"]) == set(SessionOutput().fields)
    assert set(body["transition"]) == set(TransitionOutput().fields)
    assert body["session"]["role_since"].endswith("Z")
