"""Preview a role change (POST /api/roles/<name>/replay/, ``acode role replay``): recorded
decisions replayed under a draft; nothing written; bad input refused with its code."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from roles.decision.recording import MAX_RECORDED_ARGUMENTS
from roles.history import decision_history
from roles.models import Permission, Role, RoleVersion
from sessions_app.models import AuditEvent, AuditEventType
from sessions_app.selectors.decisions import recorded_decisions
from sessions_app.services.audit import audit_record
from tests.roles.test_registry import _role_form_data

pytestmark = pytest.mark.django_db

TESTER_RULE = "command_rules[1]: python -m pytest"


def _recorded(role: str, tool: str, arguments: Any, allowed: bool, rule: str, **replay: Any) -> int:
    """A decision row as the executor writes it."""
    details = {"tool": tool, "arguments": "summary", "rule": rule, "phase": "decision",
               "replay": {"arguments": arguments, **replay}}  # fmt: skip
    if not allowed:
        details["code"] = "ACODE-ROL-003"
    event = audit_record(
        event_type=AuditEventType.TOOL_DECISION if allowed else AuditEventType.TOOL_DENIED,
        actor="job:test", role=role, target=tool,
        result="allowed" if allowed else "ACODE-ROL-003", details=details,
    )  # fmt: skip
    return int(event.pk)


@pytest.fixture
def admin_api(admin_user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


@pytest.fixture
def history() -> dict[str, int]:
    host = {"sandbox_required": True, "sandbox_available": True, "sandbox_reason": "",
            "overlay": True, "overlay_reason": ""}  # fmt: skip
    return {
        "write": _recorded(
            "tester", "write_file", {"path": "src/a.py", "content": "x"}, False, "effective_tools"
        ),
        "read": _recorded(
            "tester", "read_file", {"path": "src/a.py"}, True, "permission: read_files"
        ),
        "test": _recorded(
            "tester",
            "execute_command",
            {"argv": ["python", "-m", "pytest"]},
            True,
            TESTER_RULE,
            host=host,
        ),
        "old": int(
            audit_record(
                event_type=AuditEventType.TOOL_DECISION,
                actor="job:test",
                role="tester",
                result="allowed",
                details={"tool": "read_file", "arguments": "{}", "rule": "x"},
            ).pk
        ),
    }


def test_replay_api_reports_what_a_draft_would_change_and_writes_nothing(
    admin_api: APIClient, history: dict[str, int]
) -> None:
    draft = {"permissions": ["read_files", "write_files", "execute_commands"],
             "write_paths": ["src/**"], "examples": []}  # fmt: skip
    audit_rows, versions = AuditEvent.objects.count(), RoleVersion.objects.count()
    response = admin_api.post("/api/roles/Tester/replay/", {"draft": draft}, format="json")
    assert response.status_code == 200, response.json()
    report = response.json()
    assert (report["decisions"], report["replayed"], report["unchanged"]) == (4, 3, 2)
    assert (report["denied_to_allowed"], report["allowed_to_denied"]) == (1, 0)
    assert report["not_replayable_reasons"][0]["count"] == 1
    first = report["groups"][0]
    assert (first["change"], first["tool"], first["recorded_rule"], first["rule"]) == (
        "denied->allowed",
        "write_file",
        "effective_tools",
        "write_paths: src/**",
    )
    assert first["examples"][0]["audit_id"] == history["write"]
    assert (AuditEvent.objects.count(), RoleVersion.objects.count()) == (audit_rows, versions)
    assert "write_files" not in Role.objects.get(slug="tester").permissions.values_list(
        "code", flat=True
    )


def test_replay_shows_failing_draft_examples_without_refusing(
    admin_api: APIClient, history: dict[str, int]
) -> None:
    draft = {"permissions": ["read_files", "write_files", "execute_commands"]}
    report = admin_api.post("/api/roles/tester/replay/", {"draft": draft}, format="json").json()
    assert [f["name"] for f in report["examples_failing"]] == ["the Tester cannot modify files"]
    assert report["denied_to_allowed"] == 1


def test_replay_window_limits_the_decisions(admin_api: APIClient, history: dict[str, int]) -> None:
    row = AuditEvent.objects.get(pk=history["write"])
    body = {"since": row.created_at.isoformat(), "until": "2999-01-01T00:00:00Z"}
    assert admin_api.post("/api/roles/tester/replay/", body, format="json").json()["decisions"] == 4
    body = {"until": "2000-01-01T00:00:00Z"}
    assert admin_api.post("/api/roles/tester/replay/", body, format="json").json()["decisions"] == 0
    # Any offset ISO 8601 allows, although PostgreSQL takes none past 15:59 (found by fuzz).
    body = {"until": "0309-03-11T21:52:21-16:27"}
    assert admin_api.post("/api/roles/tester/replay/", body, format="json").status_code == 200


@pytest.mark.parametrize(
    ("name", "body", "status", "code"),
    [
        ("nobody", {}, 404, "ACODE-ROL-001"),
        ("tester", {"draft": {"write_paths": "src"}}, 400, "ACODE-ROL-004"),
        ("tester", {"draft": {"parent": "ghost"}}, 404, "ACODE-ROL-001"),
        ("tester", {"drfat": {}}, 400, "ACODE-ROL-004"),
        ("tester", {"since": "yesterday"}, 400, "ACODE-ROL-014"),
        ("tester", {"until": "2024-01-01T12:99:00Z"}, 400, "ACODE-ROL-014"),  # fuzz: minute 99
        ("tester", {"since": "0001-01-01T00:00:00+05:00"}, 400, "ACODE-ROL-014"),  # year 0
    ],
)  # fmt: skip
def test_replay_refuses_bad_input_with_its_code(
    admin_api: APIClient, name: str, body: dict[str, Any], status: int, code: str
) -> None:
    response = admin_api.post(f"/api/roles/{name}/replay/", body, format="json")
    assert (response.status_code, response.json()["code"]) == (status, code)


def test_replay_needs_the_change_role_permission(api: APIClient) -> None:
    assert api.post("/api/roles/tester/replay/", {}, format="json").status_code == 403


def test_recorded_arguments_have_a_cap() -> None:
    assert MAX_RECORDED_ARGUMENTS == 64 * 1024


def test_admin_preview_impact_renders_the_report_for_unsaved_form_values(
    admin_client_logged_in: Any, history: dict[str, int]
) -> None:
    tester = Role.objects.get(slug="tester")
    page = admin_client_logged_in.get(f"/admin/roles/role/{tester.pk}/change/").content.decode()
    assert (
        'id="preview-impact"' in page and f"/admin/roles/role/{tester.pk}/preview-impact/" in page
    )
    form = _role_form_data(tester)
    form["permissions"] = [
        *form["permissions"],  # type: ignore[misc]
        Permission.objects.get(code="write_files").pk,
    ]
    form["write_paths"] = "src/**\ntests/**"
    versions = RoleVersion.objects.count()
    response = admin_client_logged_in.post(f"/admin/roles/role/{tester.pk}/preview-impact/", form)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Denied &rarr; allowed</th><td>1</td>" in html
    assert f"/admin/audit/auditevent/{history['write']}/change/" in html
    assert "the Tester cannot modify files" in html  # a failing example is shown, not refused
    assert RoleVersion.objects.count() == versions
    assert not Role.objects.get(slug="tester").permissions.filter(code="write_files").exists()
    form["write_paths"] = "/abs"
    html = admin_client_logged_in.post(
        f"/admin/roles/role/{tester.pk}/preview-impact/", form
    ).content.decode()
    assert "ACODE-ROL-004" in html


def test_recorded_decisions_stream_in_chunks_for_the_role_in_any_case(
    history: dict[str, int],
) -> None:
    _recorded("coder", "read_file", {"path": "a"}, True, "permission: read_files")
    audit_record(event_type=AuditEventType.TOOL_DENIED, actor="job:t", role="tester",
                 result="ACODE-ROL-003", details={"tool": "x", "phase": "outcome"})  # fmt: skip
    got = [r.audit_id for r in recorded_decisions(role="TESTER", chunk=2)]
    assert got == sorted(history.values())
    assert [r.audit_id for r in decision_history(role="tester")] == got  # registered by the app
