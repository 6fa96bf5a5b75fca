"""Every event as the real clients sent it (recorded from Claude Code 2.1.332 and Codex
0.171.0 on this machine, paths replaced by placeholders), replayed against the hook route:
each is answered 200 and lands in the session's audit chain as what it is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app.models import AuditEvent, OutsideSession
from tests.sessions_app.outside.kit import hook_client, limited_coder

pytestmark = pytest.mark.django_db
RECORDED = Path(__file__).parent / "recorded"
KINDS = {"PreToolUse": {"ToolDecision", "ToolDenied", "ToolConsent"},
         "PostToolUse": {"RoleAction"}, "PostToolUseFailure": {"RoleAction"}}  # fmt: skip


def _events(name: str, root: Path) -> list[dict[str, Any]]:
    text = (RECORDED / name).read_text().replace("{ROOT}", str(root)).replace("{HOME}", "/home/dev")
    events: list[dict[str, Any]] = json.loads(text)
    return events


@pytest.mark.parametrize(("agent", "recording"), [("claude-code", "claude-code-2.1.332.json"),
                                                  ("codex", "codex-0.171.0.json")])  # fmt: skip
def test_every_recorded_event_is_answered_and_audited(
    user: Any, tmp_path: Path, agent: str, recording: str, settings: Any
) -> None:
    settings.ACODE_HOOK_ASK_SECONDS = 0.3  # Codex's touch (an ask rule) is held, then denied
    settings.ACODE_CONSENT_POLL_SECONDS = 0.05
    limited_coder()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print(1)\n")
    client: APIClient = hook_client(user)[0]
    events = _events(recording, tmp_path)
    for event in events:
        response = client.post(f"/api/hooks/{agent}/", event, format="json")
        assert response.status_code == 200, (event["hook_event_name"], response.content)
        if event["hook_event_name"] == "PreToolUse":
            assert response.json()["hookSpecificOutput"]["permissionDecision"] in ("allow", "deny")
    session = OutsideSession.objects.get(agent=agent).session
    rows = [row for row in AuditEvent.objects.filter(session=session).order_by("seq")
            if row.details.get("phase") != "timed_out"]  # fmt: skip
    assert rows[0].event_type == "SessionCreated"
    assert len(rows) == len(events) + 1
    for event, row in zip(events, rows[1:], strict=True):
        assert row.event_type in KINDS.get(event["hook_event_name"], {"HookEvent"}), row.event_type
        assert row.details["hook_event"] == event["hook_event_name"]
