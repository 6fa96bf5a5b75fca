"""Transitions API: the rules, refusals, idempotency and request ids."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from sessions_app.models import AgentSession, AuditEvent, RoleTransition
from tests.sessions_app.apis.apikit import new_session, transition

pytestmark = pytest.mark.django_db


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


def test_errors_unknown_role_missing_reason_wrong_expected(api: APIClient) -> None:
    sid = new_session(api)["id"]
    unknown = transition(api, sid, "Architect")
    assert unknown.status_code == 404 and unknown.json()["code"] == "ACODE-ROL-001"
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


def test_request_id_is_recorded(api: APIClient) -> None:
    sid = new_session(api)["id"]
    api.post(
        f"/api/sessions/{sid}/transition/",
        {"to_role": "planner", "reason": "go"},
        format="json",
        HTTP_X_REQUEST_ID="req-42",
    )
    assert RoleTransition.objects.get(session_id=sid, seq=2).request_id == "req-42"


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
