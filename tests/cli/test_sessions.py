from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)


def test_session_new_starts_in_default_and_becomes_current(cli: RunCli, config_dir: Path) -> None:
    result = cli("session", "new", "JWT auth", "--task", "Add JWT authentication")
    assert result.exit_code == 0, result.output
    assert "Created session" in result.stdout
    assert "Role: Default" in result.stdout
    saved = json.loads((config_dir / "config.json").read_text())
    (entry,) = saved["servers"].values()
    assert "token" not in entry  # the token came from the environment; nothing to store
    current = cli("session", "show", "--json")
    assert current.exit_code == 0, current.output
    assert json.loads(current.stdout)["id"] == entry["session"]


def test_session_new_no_use_keeps_the_current_session(cli: RunCli, session_id: str) -> None:
    assert cli("session", "new", "other", "--no-use").exit_code == 0
    shown = json.loads(cli("session", "show", "--json").stdout)
    assert shown["id"] == session_id


def test_session_list_marks_the_current_one(cli: RunCli, session_id: str) -> None:
    cli("session", "new", "Second", "--no-use")
    result = cli("session", "list")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if session_id[:8] in line]
    assert lines and lines[0].lstrip().startswith("*")
    assert "JWT auth" in lines[0] and "Default" in lines[0] and "no plan" in lines[0]
    listed = json.loads(cli("session", "list", "--json").stdout)
    assert {s["title"] for s in listed} == {"JWT auth", "Second"}


def test_session_use_accepts_an_id_prefix(cli: RunCli, session_id: str) -> None:
    other = json.loads(cli("session", "new", "Other", "--json").stdout)["id"]
    assert json.loads(cli("session", "show", "--json").stdout)["id"] == other
    result = cli("session", "use", session_id[:8])
    assert result.exit_code == 0, result.output
    assert f"Current session: {session_id[:8]} JWT auth (role Default)" in result.stdout
    assert json.loads(cli("session", "show", "--json").stdout)["id"] == session_id


def test_session_use_unknown_prefix_is_not_found(cli: RunCli, session_id: str) -> None:
    result = cli("session", "use", "ffffffff")
    assert result.exit_code == 3
    assert "No session you can see has an id starting with 'ffffffff'" in result.stderr


def test_session_show_prints_role_reason_and_workspace(cli: RunCli, session_id: str) -> None:
    result = cli("session", "show", session_id)
    assert result.exit_code == 0, result.output
    for text in (
        f"Session: {session_id}",
        "Title: JWT auth",
        "Task: Add JWT authentication",
        "Current Role: Default",
        "Reason: Initial state",
        "Plan: no plan",
        "Workspace: /",
    ):
        assert text in result.stdout


def test_session_flag_overrides_the_current_session(cli: RunCli, session_id: str) -> None:
    cli("session", "new", "Other")
    result = cli("role", "current", "--session", session_id, "--json")
    assert json.loads(result.stdout)["session"] == session_id


def test_commands_need_a_session(cli: RunCli) -> None:
    result = cli("role", "current")
    assert result.exit_code == 2
    assert "No session selected." in result.stderr
    assert "acode session new" in result.stderr


def test_invalid_workspace_is_a_usage_error(cli: RunCli) -> None:
    result = cli("session", "new", "x", "--workspace", "relative/path")
    assert result.exit_code == 2
    assert "ACODE-SES-002" in result.stderr


def test_session_archive_frees_the_workspace_and_restore_brings_it_back(
    cli: RunCli, session_id: str
) -> None:
    workspace = Path(json.loads(cli("session", "show", "--json").stdout)["workspace"])
    assert workspace.is_dir()
    archived = cli("session", "archive")
    assert archived.exit_code == 0, archived.output
    assert "Archived session" in archived.stdout and "read-only" in archived.stdout
    assert not workspace.exists()
    refused = cli("role", "set", "planner", "--reason", "Starting planning")
    assert refused.exit_code == 4
    assert "[ERROR] ACODE-SES-007 Session archived" in refused.stderr
    assert "restore it first" in refused.stderr
    listed = json.loads(cli("session", "list", "--status", "archived", "--json").stdout)
    assert [s["id"] for s in listed] == [session_id]
    restored = cli("session", "restore", session_id[:8])
    assert restored.exit_code == 0, restored.output
    assert f"its workspace is back at {workspace}" in restored.stdout.replace("\n", "")
    assert workspace.is_dir()
    assert cli("role", "set", "planner", "--reason", "Starting planning").exit_code == 0
