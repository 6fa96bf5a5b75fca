"""Plans and pending changes through the API."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from sessions_app.models import AuditEvent
from tests.sessions_app.apis.apikit import new_session, transition

pytestmark = pytest.mark.django_db


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
    listed = api.get(f"/api/sessions/{sid}/changes/")
    digest = listed["Acode-Changes-Digest"]
    approved = api.post(
        f"/api/sessions/{sid}/changes/approve/",
        {"summary": "LGTM", "digest": digest},
        format="json",
    )
    assert approved.json() == {
        "approved": 1,
        "commit": "",
        "branch": "",
        "outcome": "nothing was committed: changes described by hand carry no content.",
    }
    assert api.get(f"/api/sessions/{sid}/changes/").json() == []


def test_approving_in_a_role_without_permission_is_refused(api: APIClient) -> None:
    sid = new_session(api)["id"]
    transition(api, sid, "planner")
    response = api.post(
        f"/api/sessions/{sid}/changes/approve/", {"digest": "0" * 64}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["code"] == "ACODE-ROL-003"


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
    assert missing.status_code == 404 and missing.json()["code"] == "ACODE-API-404"
    blank = api.put(f"/api/sessions/{sid}/plan/", {"steps": [{"title": " "}]}, format="json")
    assert blank.json()["code"] == "ACODE-SES-004"


@pytest.mark.parametrize("path", ["src/a.py\n+forged", "\x1b[2Jsrc/a.py", "src/a.py\x9b", "a\r"])
def test_a_file_name_with_a_control_character_is_refused_even_at_its_ends(
    api: APIClient, path: str
) -> None:
    sid = new_session(api)["id"]
    transition(api, sid, "planner")
    api.put(f"/api/sessions/{sid}/plan/", {"steps": ["one"]}, format="json")
    transition(api, sid, "coder")
    refused = api.post(
        f"/api/sessions/{sid}/changes/", {"path": path, "kind": "created"}, format="json"
    )
    assert refused.status_code == 400
    assert refused.json()["code"] == "ACODE-INP-010"
    assert api.get(f"/api/sessions/{sid}/changes/").json() == []
