from __future__ import annotations

import json

import pytest

from sessions_app.models import AgentSession
from sessions_app.services.plans import plan_set
from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)


def test_status_shows_role_reason_plan_progress_and_jobs(cli: RunCli, session_id: str) -> None:
    cli("role", "set", "planner", "--reason", "Plan the JWT work")
    session = AgentSession.objects.get(pk=session_id)
    plan_set(
        session=session,
        steps=[
            {"title": "Install package", "status": "done"},
            {"title": "AuthService", "status": "done"},
            {"title": "Login endpoint", "status": "done"},
            {"title": "Middleware"},
            {"title": "Protect endpoints"},
        ],
    )
    cli("role", "set", "coder", "--reason", "Executing plan step 4")
    result = cli("status")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"Session: {session_id[:8]} JWT auth (active)" in out
    assert "Current Role: Coder" in out
    assert "Reason: Executing plan step 4" in out
    assert "Active Plan: 3/5 steps complete" in out
    assert "Jobs:" in out
    data = json.loads(cli("status", "--json").stdout)
    assert data["session"]["plan_progress"] == {"done": 3, "total": 5}
    assert data["user"] == "dev"


def test_status_without_a_session_still_checks_the_server(cli: RunCli, live_server) -> None:
    result = cli("status")
    assert result.exit_code == 0, result.output
    assert f"Server: {live_server.url} (user dev)" in result.stdout
    assert "No current session." in result.stdout


def test_scenario_5_tool_list_for_planner_names_missing_permissions(cli: RunCli) -> None:
    result = cli("tool", "list", "--role", "Planner")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Available Tools for Role: Planner" in out
    assert "- read_file: Read the contents of a workspace file" in out
    assert "(6 tools available)" in out
    # The spec's first verification step: read_file, list_directory, grep_search and
    # semantic_search (and spec 001's symbol tools, issue 38), nothing that writes.
    available = out.split("Restricted Tools")[0]
    for name in ("read_file", "list_directory", "grep_search", "semantic_search",
                 "search_code", "find_references"):  # fmt: skip
        assert f"- {name}: " in available
    assert "write_file" not in available and "execute_command" not in available
    restricted = out.split("Restricted Tools (not available in this role):")[1]
    assert (
        "- write_file: Replace the contents of an existing file (missing permission write_files)"
        in restricted
    )
    assert "execute_command" in restricted and "missing permission execute_commands" in restricted
    assert "read_file" not in restricted


def test_tool_list_current_role_follows_the_session(cli: RunCli, session_id: str) -> None:
    cli("role", "set", "planner", "--reason", "Testing constraints")
    planner = json.loads(cli("tool", "list", "--current-role", "--json").stdout)
    assert planner["role"] == "planner"
    assert "write_file" in {t["name"] for t in planner["withheld_tools"]}
    session = AgentSession.objects.get(pk=session_id)
    plan_set(session=session, steps=["Write test.txt"])
    cli("role", "set", "coder", "--reason", "Testing tool access")
    coder = cli("tool", "list", "--current-role")
    assert "Available Tools for Role: Coder" in coder.stdout
    assert "- write_file:" in coder.stdout.split("Restricted Tools")[0]


def test_tool_list_without_a_role_lists_every_tool(cli: RunCli) -> None:
    result = cli("tool", "list")
    assert result.exit_code == 0, result.output
    assert "write_file" in result.stdout and "write_files" in result.stdout
    assert "Group" in result.stdout and "write_tools" in result.stdout
    listed = json.loads(cli("tool", "list", "--json").stdout)
    assert len(listed) >= 10
    assert {t["name"]: t["group"] for t in listed}["read_file"] == "file_tools"


def test_tool_list_role_and_current_role_conflict(cli: RunCli) -> None:
    result = cli("tool", "list", "--role", "planner", "--current-role")
    assert result.exit_code == 2
    assert "either --role or --current-role" in result.stderr


def test_tool_list_unknown_role_exits_3(cli: RunCli) -> None:
    assert cli("tool", "list", "--role", "wizard").exit_code == 3
