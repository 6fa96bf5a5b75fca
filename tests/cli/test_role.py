from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from roles.services.agents import custom_agent_create
from sessions_app.models import AgentSession
from sessions_app.services.plans import plan_set
from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)

TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"


def test_scenario_3_current_role_set_and_history(cli: RunCli, session_id: str) -> None:
    current = cli("role", "current")
    assert current.exit_code == 0, current.output
    assert re.fullmatch(
        rf"Current Role: Default\nSince: {TIME}\nReason: Initial state\n", current.stdout
    )
    changed = cli("role", "set", "Planner", "--reason", "Starting feature implementation")
    assert changed.exit_code == 0, changed.output
    assert re.fullmatch(
        rf"\[SUCCESS\] Role transition: Default → Planner\n"
        rf"Reason: Starting feature implementation\nTimestamp: {TIME}\n",
        changed.stdout,
    )
    assert "Current Role: Planner" in cli("role", "current").stdout
    history = cli("role", "history")
    assert history.exit_code == 0, history.output
    assert re.search(
        rf"Role Transition History:\n\n1\. \[{TIME}\] Default\n   Reason: Initial state\n"
        rf"   By: dev\n\n2\. \[{TIME}\] Default → Planner\n"
        rf"   Reason: Starting feature implementation\n",
        history.stdout,
    ), history.stdout
    rows = json.loads(cli("role", "history", "--json").stdout)
    assert [(r["from_role"], r["to_role"]) for r in rows] == [
        (None, "default"),
        ("default", "planner"),
    ]


def test_scenario_6_refused_transition_exits_4_and_lists_valid_ones(
    cli: RunCli, session_id: str
) -> None:
    cli("role", "set", "planner", "--reason", "Starting planning")
    result = cli("role", "set", "Reviewer", "--reason", "Skipping implementation")
    assert result.exit_code == 4
    err = result.stderr
    assert "[ERROR] ACODE-ROL-002 Role transition not allowed" in err
    assert "Cannot transition from Planner to Reviewer." in err
    assert "Attempted: Planner → Reviewer" in err
    assert "Explanation: Reviewer role requires completed implementation to review." in err
    assert "Reviewer is entered from: Default (when the session has pending changes)" in err
    assert "Valid transitions from Planner:" in err
    assert (
        "  - Planner → Coder (when the session has a plan) — not now: the session has no plan yet"
        in err
    )
    assert "  - Planner → Default (always)" in err
    assert "Suggestion:" in err
    assert "Current Role: Planner" in cli("role", "current").stdout


def test_precondition_met_lets_the_transition_through(cli: RunCli, session_id: str) -> None:
    cli("role", "set", "planner", "--reason", "plan")
    plan_set(session=AgentSession.objects.get(pk=session_id), steps=["Add login"])
    result = cli("role", "set", "coder", "--reason", "Plan complete, starting implementation")
    assert result.exit_code == 0, result.output
    assert "[SUCCESS] Role transition: Planner → Coder" in result.stdout


def test_refused_transition_as_json_goes_to_stderr(cli: RunCli, session_id: str) -> None:
    result = cli("role", "set", "reviewer", "--reason", "x", "--json")
    assert result.exit_code == 4
    assert result.stdout == ""
    body = json.loads(result.stderr)["error"]
    assert body["code"] == "ACODE-ROL-002"
    assert "valid_transitions" in body["details"]


def test_expect_guards_against_a_changed_role(cli: RunCli, session_id: str) -> None:
    result = cli("role", "set", "explorer", "--reason", "look", "--expect", "planner")
    assert result.exit_code == 4
    assert "ACODE-ROL-006" in result.stderr
    assert "Expected the session to be in Planner, but it is in Default" in result.stderr
    assert cli("role", "set", "explorer", "--reason", "look", "--expect", "default").exit_code == 0


def test_unknown_role_in_set_exits_3(cli: RunCli, session_id: str) -> None:
    result = cli("role", "set", "wizard", "--reason", "magic")
    assert result.exit_code == 3
    assert "ACODE-ROL-001" in result.stderr


def test_blank_reason_is_refused_and_missing_reason_is_a_usage_error(
    cli: RunCli, session_id: str
) -> None:
    blank = cli("role", "set", "planner", "--reason", "   ")
    assert blank.exit_code == 2
    assert "ACODE-ROL-007" in blank.stderr
    missing = cli("role", "set", "planner")
    assert missing.exit_code == 2
    assert "--reason" in missing.stderr


def test_setting_the_current_role_writes_nothing(cli: RunCli, session_id: str) -> None:
    result = cli("role", "set", "default", "--reason", "again")
    assert result.exit_code == 0
    assert "already in Default; nothing was written" in result.stdout
    assert len(json.loads(cli("role", "history", "--json").stdout)) == 1


def test_role_transitions_shows_what_is_allowed_now(cli: RunCli, session_id: str) -> None:
    result = cli("role", "transitions")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Valid transitions from Default:" in out
    assert "✓ Default → Planner (always)" in out
    assert (
        "✗ Default → Coder (when the session has a plan) — not now: the session has no plan yet"
        in out
    )
    data = json.loads(cli("role", "transitions", "--json").stdout)
    assert {t["to_role"] for t in data if t["allowed_now"]} >= {"planner", "explorer"}


def test_role_transitions_suggests_the_agent_the_task_calls_for(
    cli: RunCli, session_id: str, django_user_model: Any
) -> None:
    maker = django_user_model.objects.create_superuser("maker", "m@x", "pw-maker-123")
    custom_agent_create(user=maker, name="JWT Scout", template="planner", goals=["Map auth"],
                        checklist=["Cite files"], routing_keywords=["jwt", "oauth"])  # fmt: skip
    out = cli("role", "transitions").stdout
    assert "✓ Default → JWT Scout (always) — suggested for this task: jwt" in out
    assert "✓ Default → Planner (always)\n" in out


def test_role_test_checks_a_file_before_import_and_exits_1_on_a_failing_example(
    cli: RunCli, tmp_path: Path
) -> None:
    stored = cli("role", "test")
    assert stored.exit_code == 0, stored.output
    assert "ok   planner examples[0] (the Planner cannot write)" in stored.stdout
    assert "example(s): all pass" in stored.stdout
    document = yaml.safe_load(cli("roles", "export").stdout)
    planner = next(r for r in document["roles"] if r["slug"] == "planner")
    planner["permissions"], planner["allowed_tools"] = ["read_files", "write_files"], []
    file = tmp_path / "roles.yaml"
    file.write_text(yaml.safe_dump(document, sort_keys=False))
    result = cli("role", "test", str(file))
    assert result.exit_code == 1, result.output
    assert "FAIL planner examples[0] (the Planner cannot write)" in result.stdout
    assert "-> allow by 'write_paths: anywhere' (expected deny)" in result.stdout
    assert "1 failed" in result.stdout
    as_json = cli("role", "test", str(file), "--json")
    assert as_json.exit_code == 1 and json.loads(as_json.stdout)["failed"] == 1
