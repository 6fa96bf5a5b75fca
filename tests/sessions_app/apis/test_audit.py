"""The audit log through the API: search, export, pagination, verification."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from sessions_app.models import AuditEvent, RoleTransition
from tests.sessions_app.apis.apikit import new_session, transition

pytestmark = pytest.mark.django_db


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
