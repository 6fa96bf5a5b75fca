"""Sessions API: open, read, list, filter, access."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app.services.workspaces import git_dir_of
from tests.sessions_app.apis.apikit import new_session, transition
from tests.sessions_app.jobkit import allow_attach

pytestmark = pytest.mark.django_db


def test_session_starts_in_default_with_git_workspace(api: APIClient) -> None:
    body = new_session(api)
    assert body["current_role"]["slug"] == "default"
    assert body["last_reason"] == "Initial state"
    assert body["role_version"] == 1
    assert not (Path(body["workspace"]) / ".git").exists()  # git lives in server state
    assert git_dir_of(body["id"]).is_dir()


def test_attaching_a_directory_needs_the_permission_and_an_allowed_root(
    api: APIClient, user: Any, tmp_path: Path
) -> None:
    refused = api.post("/api/sessions/", {"title": "x", "workspace": "/etc"}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "ACODE-SES-002"
    missing = api.post(
        "/api/sessions/", {"title": "x", "workspace": str(tmp_path / "nope")}, format="json"
    )
    assert missing.json()["message"] == refused.json()["message"], "no hint that a path exists"
    allow_attach(user)
    assert new_session(api, workspace=str(tmp_path))["workspace"] == str(tmp_path)


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


def test_fast_serializers_match_their_declared_fields(api: APIClient) -> None:
    from sessions_app.apis.serializers import SessionOutput, TransitionOutput

    sid = new_session(api)["id"]
    body = transition(api, sid, "planner", "go").json()
    assert set(body["session"]) == set(SessionOutput().fields)
    assert set(body["transition"]) == set(TransitionOutput().fields)
    assert body["session"]["role_since"].endswith("Z")
