"""Recorded hook payloads of Claude Code and Codex, every event, malformed and hostile
ones: each is a decision or a clean 4xx, audited in the session's chain."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from sessions_app.models import AuditEvent, OutsideSession, ToolConsent
from sessions_app.services.archive import session_archive, session_restore
from sessions_app.services.transitions import session_transition
from tests.sessions_app.outside.kit import (
    decision,
    hook_client,
    limited_coder,
    mcp_echo_limited,
    pre,
)

pytestmark = pytest.mark.django_db
URL = "/api/hooks/claude-code/"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print(1)\n")
    (tmp_path / ".env").write_text("TOKEN=abc\n")
    return tmp_path


@pytest.fixture
def hooks(user: Any) -> APIClient:
    limited_coder()
    return hook_client(user)[0]


def test_the_first_event_creates_the_session_in_the_tokens_role(
    hooks: APIClient, root: Path
) -> None:
    start = {"session_id": "s-1", "cwd": str(root), "hook_event_name": "SessionStart",
             "source": "startup", "transcript_path": "/tmp/t.jsonl", "new_field": [1]}  # fmt: skip
    response = hooks.post(URL, start, format="json", HTTP_X_ACODE_MACHINE="laptop-7")
    assert response.status_code == 200 and response.json() == {}
    outside = OutsideSession.objects.select_related("session").get()
    assert (outside.agent, outside.agent_session_id, outside.machine) == (
        "claude-code",
        "s-1",
        "laptop-7",
    )
    assert outside.session.workspace == str(root) and outside.session.current_role.slug == "coder"
    row = AuditEvent.objects.filter(session=outside.session, event_type="HookEvent").get()
    assert row.target == "SessionStart" and "new_field" in row.details["fields"]
    hooks.post(URL, pre(root, "Read", {"file_path": str(root / "src/app.py")}), format="json")
    assert OutsideSession.objects.count() == 1  # the same session


@pytest.mark.parametrize(
    ("tool", "tool_input", "outcome", "rule"),
    [
        ("Read", {"file_path": "SRC"}, "allow", "permission: read_files"),
        ("Write", {"file_path": "SRC", "content": "x"}, "allow", "write_paths: src/**"),
        ("Write", {"file_path": "ROOT/setup.py", "content": "x"}, "deny", "write_paths"),
        (
            "Edit",
            {"file_path": "ROOT/src/../../etc/passwd", "old_string": "a", "new_string": "b"},
            "deny",
            "path",
        ),
        ("Read", {"file_path": "ROOT/.env"}, "deny", "secrets"),
        ("Bash", {"command": "ls src && rm -rf /"}, "deny", "command_rules"),
        ("Bash", {"command": "echo $(cat .env)"}, "deny", "shell"),
        ("Bash", {"command": "cat .env"}, "deny", "secrets"),
        ("Bash", {"command": "echo hi > setup.py"}, "deny", "write_paths"),
        ("Bash", {"command": "ls src | cat; echo done"}, "allow", ""),
        ("Bash", {"command": "touch src/new.py"}, "ask", "command_rules"),
        ("Glob", {"pattern": "../**/*"}, "deny", "path"),
        ("Grep", {"pattern": "print", "path": "ROOT/src"}, "allow", "permission: read_files"),
        ("WebFetch", {"url": "https://example.com", "prompt": "x"}, "deny", "permission: network"),
        ("mcp__github__create_issue", {"title": "x"}, "deny", "tool_exists"),
        ("Teleport", {"where": "mars"}, "deny", "tool_exists"),
        ("Read", ["not", "an", "object"], "deny", "schema"),
        ("Read", {"file_path": "~/.ssh/id_rsa"}, "deny", "path"),
    ],
)
def test_each_call_is_decided_by_the_role_and_names_its_rule(
    hooks: APIClient, root: Path, tool: str, tool_input: Any, outcome: str, rule: str
) -> None:
    if isinstance(tool_input, dict):
        tool_input = {k: v.replace("SRC", str(root / "src/app.py")).replace("ROOT", str(root))
                      if isinstance(v, str) else v for k, v in tool_input.items()}  # fmt: skip
    response = hooks.post(URL, pre(root, tool, tool_input), format="json")
    assert response.status_code == 200, response.content
    said, reason = decision(response)
    assert said == outcome, reason
    if outcome != "allow":
        assert rule in reason
    row = (
        AuditEvent.objects.filter(session__isnull=False).exclude(event_type="SessionCreated").get()
    )
    assert rule in row.details["rule"]
    kinds = {"allow": "ToolDecision", "deny": "ToolDenied", "ask": "ToolConsent"}
    assert row.event_type == kinds[outcome] and row.role == "coder"


def test_post_tool_use_and_other_events_are_recorded(hooks: APIClient, root: Path) -> None:
    events: list[dict[str, Any]] = [
        {**pre(root, "Bash", {"command": "ls"}), "hook_event_name": "PostToolUse",
         "tool_response": {"stdout": "src\n", "stderr": "", "interrupted": False}},
        {**pre(root, "Bash", {"command": "ls"}), "hook_event_name": "PostToolUseFailure",
         "error": "exit 2"},
        {"session_id": "s-1", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
         "prompt": "deploy with TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
        {"session_id": "s-1", "cwd": str(root), "hook_event_name": "SessionEnd", "reason": "exit"},
        {"session_id": "s-1", "cwd": str(root), "hook_event_name": "SomethingNew", "x": {"y": 1}},
    ]  # fmt: skip
    for event in events:
        assert hooks.post(URL, event, format="json").status_code == 200
    rows = list(
        AuditEvent.objects.filter(session__isnull=False)
        .exclude(event_type="SessionCreated")
        .order_by("seq")
    )
    assert [(r.event_type, r.result) for r in rows] == [
        ("RoleAction", "ok"), ("RoleAction", "error"), ("HookEvent", "recorded"),
        ("HookEvent", "recorded"), ("HookEvent", "recorded"),
    ]  # fmt: skip
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in str(rows[2].details)


def test_permission_request_answers_with_a_behavior(hooks: APIClient, root: Path) -> None:
    event = {**pre(root, "Bash", {"command": "rm -rf src"}), "hook_event_name": "PermissionRequest"}
    out = hooks.post(URL, event, format="json").json()["hookSpecificOutput"]
    assert out["hookEventName"] == "PermissionRequest" and out["decision"]["behavior"] == "deny"


def test_a_role_change_is_in_force_on_the_next_call(
    hooks: APIClient, root: Path, user: Any
) -> None:
    write = pre(root, "Write", {"file_path": str(root / "src/x.py"), "content": "x"})
    assert decision(hooks.post(URL, write, format="json"))[0] == "allow"
    session = OutsideSession.objects.get().session
    session_transition(session=session, to_role="tester", reason="test now", user=user)
    said, reason = decision(hooks.post(URL, write, format="json"))
    assert said == "deny" and "Tester" in reason


@pytest.mark.parametrize(
    "body",
    [
        [1, 2],
        {"hook_event_name": "PreToolUse"},
        {"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "relative/dir"},
        {"hook_event_name": 5, "session_id": "s", "cwd": "/x"},
        {"hook_event_name": "PreToolUse", "session_id": "s" * 201, "cwd": "/x"},
        {"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/x\u0000y"},
    ],
)
def test_malformed_events_are_a_clean_4xx(hooks: APIClient, body: Any) -> None:
    response = hooks.post(URL, body, format="json")
    assert response.status_code == 400 and response.json()["code"] in {
        "ACODE-HOK-001",
        "ACODE-API-400",
        "ACODE-INP-001",
        "ACODE-INP-003",
    }


def test_hostile_bodies_and_tokens(hooks: APIClient, root: Path, user: Any) -> None:
    huge = pre(root, "Write", {"file_path": str(root / "src/a.py"), "content": "x" * 3_000_000})
    assert hooks.post(URL, huge, format="json").status_code == 413
    bad = hooks.post(URL, b'{"a": 1, "a": 2}', content_type="application/json")
    assert bad.status_code == 400
    not_json = hooks.post(URL, b"<xml/>", content_type="application/json")
    assert not_json.status_code == 400
    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION="Bearer acodehk_forged")
    assert (
        stranger.post(URL, pre(root, "Read", {"file_path": "x"}), format="json").status_code == 401
    )
    api_token = APIClient()
    api_token.force_authenticate(user)  # a login is not a hook token
    assert api_token.post(
        URL, pre(root, "Read", {"file_path": "x"}), format="json"
    ).status_code in {401, 403}
    for odd in ('"\\ud800"', '"a\\u0000b"', "1e999", '{"deep": ' * 600 + "1" + "}" * 600):
        raw = '{"session_id": "s-1", "cwd": "%s", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": %s}}'
        answer = hooks.post(URL, (raw % (root, odd)).encode(), content_type="application/json")
        assert answer.status_code in (200, 400), (odd[:20], answer.content)
    long_line = pre(root, "Bash", {"command": "echo " + "a " * 20_000})
    assert decision(hooks.post(URL, long_line, format="json"))[0] == "deny"


def test_a_revoked_hook_token_is_refused_on_the_next_call(user: Any, root: Path) -> None:
    client = hook_client(user)[0]
    read = pre(root, "Read", {"file_path": str(root / "src/app.py")})
    assert decision(client.post(URL, read, format="json"))[0] == "allow"
    owner = APIClient()
    owner.force_authenticate(user)
    token_id = owner.get("/api/hook-tokens/").json()[0]["id"]
    assert owner.delete(f"/api/hook-tokens/{token_id}/").status_code == 204
    refused = client.post(URL, read, format="json")
    assert refused.status_code == 401 and refused.json()["code"] == "ACODE-API-401"


def test_codex_and_other_agents_get_the_acode_answer(hooks: APIClient, root: Path) -> None:
    event = {"session_id": "c-1", "turn_id": "t1", "cwd": str(root), "hook_event_name": "PreToolUse",
             "model": "m", "permission_mode": "default", "tool_name": "Bash",
             "tool_input": {"command": "cat setup.py; rm -rf ."}, "tool_use_id": "call_1"}  # fmt: skip
    body = hooks.post("/api/hooks/codex/", event, format="json").json()
    assert (
        body["acode"]["outcome"] == "deny"
        and body["hookSpecificOutput"]["permissionDecision"] == "deny"
    )
    patch = {
        **event,
        "tool_name": "apply_patch",
        "tool_input": {
            "command": "*** Begin Patch\n*** Add File: src/ok.py\n+x\n*** Update File: README.md\n*** End Patch"
        },
    }
    body = hooks.post("/api/hooks/codex/", patch, format="json").json()
    assert body["acode"]["outcome"] == "deny" and "README.md" in body["acode"]["reason"]
    assert OutsideSession.objects.get().agent == "codex"
    assert hooks.post("/api/hooks/Not_Valid/", event, format="json").status_code == 404


def test_an_mcp_tool_is_decided_with_the_roles_argument_limits(
    hooks: APIClient, root: Path
) -> None:
    mcp_echo_limited()
    short = pre(root, "mcp__everything__echo", {"message": "hello"})
    assert decision(hooks.post(URL, short, format="json"))[0] == "allow"
    long = pre(root, "mcp__everything__echo", {"message": "far too long a message"})
    said, reason = decision(hooks.post(URL, long, format="json"))
    assert said == "deny" and "argument_limits[coder]: mcp__everything__echo" in reason


@pytest.mark.django_db(transaction=True)
def test_each_event_is_told_to_the_board_and_the_session_page_after_commit(
    hooks: APIClient, root: Path, sent: list[tuple[str, str]]
) -> None:
    hooks.post(URL, pre(root, "Read", {"file_path": str(root / "src/app.py")}), format="json")
    session = OutsideSession.objects.get().session
    assert ("acode-board", "session.created") in sent
    assert (f"acode-session-{session.pk}", "outside.event") in sent
    assert ("acode-board", "outside.event") in sent


@pytest.mark.django_db(transaction=True)
def test_a_held_call_is_answered_on_the_session_page(
    hooks: APIClient, root: Path, user: Any, settings: Any
) -> None:
    """Codex cannot ask its user: the hook waits until the owner allows it on the page."""
    settings.ACODE_HOOK_ASK_SECONDS = 20.0
    settings.ACODE_CONSENT_POLL_SECONDS = 0.05
    event = pre(root, "Bash", {"command": "touch src/new.py"}, sid="c-9")
    answers: list[Any] = []

    def agent() -> None:
        answers.append(hooks.post("/api/hooks/codex/", event, format="json").json())
        connection.close()

    waiting = threading.Thread(target=agent)
    waiting.start()
    deadline = time.monotonic() + 15
    while not ToolConsent.objects.filter(status="pending").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    consent = ToolConsent.objects.get(status="pending")
    page = Client()
    page.force_login(user)
    shown = page.get(f"/sessions/{consent.session_id}/").content.decode()
    assert "Allow this call" in shown and "touch src/new.py" in shown
    page.post(f"/sessions/{consent.session_id}/consents/{consent.pk}/", {"allow": "yes"})
    waiting.join(timeout=15)
    assert (
        answers[0]["acode"]["outcome"] == "allow" and "dev allowed" in answers[0]["acode"]["reason"]
    )


def test_a_held_call_nobody_answers_is_denied_in_time(
    hooks: APIClient, root: Path, settings: Any
) -> None:
    settings.ACODE_HOOK_ASK_SECONDS = 0.3
    settings.ACODE_CONSENT_POLL_SECONDS = 0.05
    event = pre(root, "Bash", {"command": "touch src/new.py"}, sid="c-10")
    body = hooks.post("/api/hooks/codex/", event, format="json").json()
    assert (
        body["acode"]["outcome"] == "deny" and "Nobody allowed this call" in body["acode"]["reason"]
    )
    assert ToolConsent.objects.get().status == "timed_out"


def test_a_hook_token_opens_the_hook_route_only(user: Any) -> None:
    client, key = hook_client(user)
    assert client.get("/api/sessions/").status_code == 401
    assert client.get("/api/me/").status_code == 401
    as_token = APIClient()
    as_token.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert as_token.get("/api/sessions/").status_code == 401


def test_the_board_shows_an_outside_sessions_agent_kind(
    hooks: APIClient, root: Path, user: Any
) -> None:
    """One board for every agent's work: an outside session's card names its agent."""
    hooks.post(URL, pre(root, "Read", {"file_path": str(root / "src/app.py")}), format="json")
    session = OutsideSession.objects.get().session
    board = Client()
    board.force_login(user)
    page = board.get("/").content.decode()
    card = page[page.index(f'data-session="{session.pk}"') :].split("</article>")[0]
    assert 'data-agent="claude-code"' in card and "Claude Code" in card
    assert page.count("data-agent=") == 1  # acode's own sessions carry no agent badge


def test_an_archived_outside_session_denies_calls_and_audits_the_denials_until_restored(
    hooks: APIClient, root: Path, user: Any
) -> None:
    read = pre(root, "Read", {"file_path": str(root / "src/app.py")})
    assert decision(hooks.post(URL, read, format="json"))[0] == "allow"
    session = OutsideSession.objects.select_related("session").get().session
    session_archive(session=session, user=user)
    assert (root / "src").is_dir(), "the agent's own directory is never removed"
    rows = AuditEvent.objects.filter(session=session).count()
    outcome, reason = decision(hooks.post(URL, read, format="json"))
    assert outcome == "deny" and "archived" in reason and "ACODE-SES-007" in reason
    done = {**read, "hook_event_name": "PostToolUse", "tool_response": {"ok": True}}
    assert hooks.post(URL, done, format="json").status_code == 200
    after = AuditEvent.objects.filter(session=session).order_by("seq")
    assert after.count() == rows + 1, "the denial only; not the outcome"
    denied = after.last()
    assert denied is not None and denied.event_type == "ToolDenied"
    assert (denied.result, denied.details["rule"], denied.target) == (
        "ACODE-SES-007", "session archived", "Read")  # fmt: skip
    session_restore(session=session, user=user)
    assert decision(hooks.post(URL, read, format="json"))[0] == "allow"
