"""Malformed requests that used to crash with an HTML 500 now get a JSON 400."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import urlencode

import pytest
from rest_framework.test import APIClient

from sessions_app.models import AgentSession
from sessions_app.services.jobs import job_create
from tests.sessions_app.apis.apikit import new_session

pytestmark = pytest.mark.django_db


def assert_400(response: Any, code: str = "ACODE-API-400") -> None:
    assert response.status_code == 400, response.content
    assert response.json()["code"] == code


@pytest.mark.parametrize("body", ["null", "1", '"text"', "[]"])
def test_session_patch_with_a_body_that_is_not_an_object(api: APIClient, body: str) -> None:
    sid = new_session(api)["id"]
    response = api.generic("PATCH", f"/api/sessions/{sid}/", body, "application/json")
    assert_400(response)


def test_session_patch_still_refuses_role_changes(api: APIClient) -> None:
    sid = new_session(api)["id"]
    response = api.patch(f"/api/sessions/{sid}/", {"current_role": "coder"}, format="json")
    assert_400(response, "ACODE-SES-003")


@pytest.mark.parametrize("after", ["abc", "1.5", "-1"])
def test_job_events_after_must_be_a_count(api: APIClient, after: str) -> None:
    sid = new_session(api)["id"]
    job = job_create(session=AgentSession.objects.get(pk=sid), request="x")
    assert_400(api.get(f"/api/jobs/{job.pk}/events/", {"after": after}))
    assert api.get(f"/api/jobs/{job.pk}/events/", {"after": "0"}).status_code == 200


@pytest.mark.parametrize(
    "step",
    [
        {"title": "t", "files": 5},
        {"title": "t", "depends_on": ["x"]},
        {"title": "t", "depends_on": [True]},
        {"title": "t", "detail": ["x"]},
        {"title": "t", "status": "someday"},
        None,
        5,
        {"title": None},
        {"title": " \u200b "},
    ],
)
def test_malformed_plan_steps_are_invalid_plans(api: APIClient, step: Any) -> None:
    sid = new_session(api)["id"]
    response = api.put(f"/api/sessions/{sid}/plan/", {"steps": [step]}, format="json")
    assert_400(response, "ACODE-SES-004")
    assert api.get(f"/api/sessions/{sid}/plan/").json() == []


@pytest.mark.parametrize("steps", [None, 5, "one"])
def test_plan_steps_must_be_a_list(api: APIClient, steps: Any) -> None:
    sid = new_session(api)["id"]
    response = api.put(f"/api/sessions/{sid}/plan/", {"steps": steps}, format="json")
    assert_400(response, "ACODE-SES-004")


@pytest.mark.parametrize("position", ["abc", "-5", "1.5", str(2**63)])
def test_a_forged_audit_cursor_names_no_page(api: APIClient, position: str) -> None:
    new_session(api)
    cursor = base64.b64encode(urlencode({"p": position}).encode()).decode()
    response = api.get("/api/audit/", {"cursor": cursor})
    assert response.status_code == 404 and response.json()["code"] == "ACODE-API-404"


def test_garbage_audit_cursor(api: APIClient) -> None:
    assert_400(api.get("/api/audit/", {"cursor": "not base64 at all"}))


def test_audit_cursor_from_a_page_works(api: APIClient) -> None:
    new_session(api)
    new_session(api)
    first = api.get("/api/audit/", {"page_size": 1}).json()
    assert api.get(first["next"]).status_code == 200


@pytest.mark.parametrize(
    ("moment", "status"),
    [("2026-01-01T00:00:00+23:30", 200), ("0001-01-01T00:00:00+05:00", 400)],
)
def test_audit_times_with_any_offset(api: APIClient, moment: str, status: int) -> None:
    # PostgreSQL refuses offsets beyond 15:59; before the year 1 in UTC there is no time.
    assert api.get("/api/audit/", {"since": moment}).status_code == status
    assert api.get("/api/audit/export/", {"format": "csv", "until": moment}).status_code == status


@pytest.mark.parametrize("last", ["0", "-1", "x", "10001"])
def test_audit_last_out_of_range(api: APIClient, last: str) -> None:
    assert_400(api.get("/api/audit/", {"last": last}))


def test_session_list_with_an_unknown_status(api: APIClient) -> None:
    assert_400(api.get("/api/sessions/", {"status": "nonsense"}))
