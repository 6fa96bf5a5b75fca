"""Replay gives the decisions the executor gives: calls made live under a role are recorded,
replayed under a draft, then made live again once the draft is saved; call by call, the
replayed decision is the live one (allowed, rule, code)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from roles.decision.replay import NO_ENTRY, recorded_decision, replay_decision
from roles.registry import registry
from roles.services import role_write
from roles.services.replay import role_draft, role_replay
from sessions_app.agent.executor import tool_execute
from sessions_app.agent.tool_context import tool_context
from sessions_app.agent.tools import TOOL_IMPLEMENTATIONS, ToolImpl, ToolResult
from sessions_app.models import AuditEvent
from sessions_app.selectors.decisions import recorded_decisions
from sessions_app.services.jobs import job_create
from tests.sessions_app.jobkit import session_in

pytestmark = pytest.mark.django_db

LS = {"program": "ls", "options": {"-l": None}, "args": "paths"}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "src/app.py"}),
    ("list_directory", {"path": "."}),
    ("write_file", {"path": "src/app.py", "content": "x = 2\n"}),
    ("write_file", {"path": "docs/guide.md", "content": "hi\n"}),
    ("create_file", {"path": "src/new.py", "content": ""}),
    ("read_file", {"path": "../etc/passwd"}),
    ("execute_command", {"argv": ["python", "-m", "pytest", "-q", "tests"]}),
    ("execute_command", {"argv": ["python", "-m", "pytest", "-q", "outside/t.py"]}),
    ("execute_command", {"argv": ["python", "-m", "pytest", "-q", "src/link/t.py"]}),
    ("execute_command", {"argv": ["python", "-c", "import os"]}),
    ("run_tests", {}),
    ("execute_command", {"argv": ["rm", "-rf", "src"]}),
    ("execute_command", {"argv": ["pytest", "-q", "tests"], "timeout_seconds": 5}),
    ("ask_human", {"question": "ok?"}),
    ("write_file", {"path": 7}),
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "docs").mkdir()
    (ws / "tests").mkdir()
    (ws / "src" / "app.py").write_text("x = 1\n")
    (ws / "docs" / "guide.md").write_text("guide\n")
    (tmp_path / "elsewhere").mkdir()
    (ws / "outside").symlink_to(tmp_path / "elsewhere")
    (ws / "src" / "link").symlink_to("../docs")
    return ws


@pytest.fixture(autouse=True)
def no_commands_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """What is compared is the decision; allowed commands do not need to run."""

    def ran(ctx: Any, args: dict[str, Any]) -> ToolResult:
        return ToolResult("ok", "t", "ran")

    for name in ("execute_command", "run_tests", "ask_human"):
        monkeypatch.setitem(TOOL_IMPLEMENTATIONS, name, ToolImpl(name, ran))


def _make_calls(
    user: Any, workspace: Path, calls: list[tuple[str, dict[str, Any]]]
) -> list[tuple[bool, str, str]]:
    """Every call through the executor; each one's decision as its audit row says."""
    session = session_in("tester", user, workspace=workspace)
    job = job_create(session=session, request="t", user=user)
    context = tool_context(job, session, [])
    registry.sync()
    start = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    for tool, arguments in calls:
        tool_execute(session=session, role=registry.get("tester"), tool=tool,
                     arguments=arguments, actor="job:test", context=context, job=job)  # fmt: skip
    return [
        (r.allowed, r.rule, r.code) for r in recorded_decisions(role="tester") if r.audit_id > start
    ]


DRAFT: dict[str, Any] = {
    "permissions": ["execute_commands", "read_files", "write_files", "create_files", "ask_human"],
    "write_paths": ["src/**"],
    "examples": [],
}


def test_replay_under_a_draft_gives_the_live_decisions_call_by_call(
    user: Any, workspace: Path
) -> None:
    registry.sync()
    draft_data = {**DRAFT, "command_patterns": [*registry.get("tester").spec.command_patterns, LS]}
    calls = [*CALLS, ("execute_command", {"argv": ["ls", "-l", "src"]})]
    before = _make_calls(user, workspace, calls)
    recorded = list(recorded_decisions(role="tester"))[-len(calls) :]
    draft = role_draft(slug="tester", data=draft_data)
    replayed = [replay_decision(draft.role, r) for r in recorded]
    # ls was refused by its program alone, yet the link its path could go through was
    # recorded (every fact a decision could read is): every decision replays.
    assert [r.detail for r in replayed if r.decision is None] == []
    report = role_replay(slug="tester", data=draft_data)
    role_write(data=draft_data, create=False, slug="tester", actor="test")
    after = _make_calls(user, workspace, calls)
    assert len(before) == len(after) == len(calls)
    got = [(r.decision.allowed, r.decision.rule, r.decision.code) if r.decision else None
           for r in replayed]  # fmt: skip
    assert [g for g in got if g] == [a for a, g in zip(after, got, strict=True) if g]
    assert before != after  # the draft changed something, and replay saw it
    changed = [b[0] != a[0] for b, a, g in zip(before, after, got, strict=True) if g]
    assert (
        report["denied_to_allowed"] == sum(changed) == 4
    )  # write_file, create_file in src/, ask_human, ls -l src
    assert (report["replayed"], report["not_replayable"]) == (len(calls), 0)
    assert report["not_replayable_reasons"] == []
    groups = {(g["change"], g["tool"], g["recorded_rule"], g["rule"]): g for g in report["groups"]}
    write = groups["denied->allowed", "write_file", "effective_tools", "write_paths: src/**"]
    assert write["count"] == 1 and write["examples"][0]["audit_id"] == recorded[2].audit_id


def test_secret_or_large_arguments_are_not_recorded_and_not_replayed(
    user: Any, workspace: Path
) -> None:
    session = session_in("tester", user, workspace=workspace)
    job = job_create(session=session, request="t", user=user)
    context = tool_context(job, session, [])
    registry.sync()
    secret = {"argv": ["python", "-m", "pytest", "-k", "password=hunter2hunter2"]}
    large = {"path": "src/app.py", "content": "x" * 70_000}
    for arguments, tool in ((secret, "execute_command"), (large, "write_file")):
        tool_execute(session=session, role=registry.get("tester"), tool=tool,
                     arguments=arguments, actor="job:test", context=context, job=job)  # fmt: skip
    rows = list(AuditEvent.objects.filter(details__phase="decision").order_by("-id")[:2])
    assert all("unrecorded" in r.details["replay"] for r in rows)
    assert not any("arguments" in r.details["replay"] for r in rows)
    assert "hunter2" not in str([row.details["replay"] for row in rows])
    every = AuditEvent.objects.filter(session=session).values_list("target", "details")
    assert "hunter2" not in str(list(every))  # normalised argv, target, reason: redacted too
    reasons = [r.unrecorded for r in recorded_decisions(role="tester")][-2:]
    assert reasons == [
        "the arguments hold something redacted (a secret is never stored)",
        "the arguments are larger than 65536 bytes",
    ]
    report = role_replay(slug="tester", data={})
    assert report["not_replayable"] == 2 and report["replayed"] == 0


def test_a_decision_recorded_before_replay_entries_is_not_replayable() -> None:
    old = recorded_decision(
        audit_id=1, at=None, event_type="ToolDecision", result="allowed",
        details={"tool": "read_file", "arguments": '{"path": "a"}', "rule": "permission: read_files"},
    )  # fmt: skip
    registry.sync()
    replayed = replay_decision(registry.get("tester"), old)
    assert replayed.decision is None and replayed.reason == NO_ENTRY
