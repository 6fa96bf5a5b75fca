from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)


def test_roles_list_shows_every_role_in_a_table(cli: RunCli) -> None:
    result = cli("roles", "list")
    assert result.exit_code == 0, result.output
    assert "Available Roles" in result.stdout
    for name in ("Default", "Planner", "Coder", "Reviewer", "Explorer", "Tester"):
        assert name in result.stdout
    assert "Task decomposition and planning." in result.stdout
    assert "grep_search, list_directory, read_file" in result.stdout
    data = json.loads(cli("roles", "list", "--json").stdout)
    assert {"default", "planner", "coder", "reviewer"} <= {r["slug"] for r in data}


def test_role_list_is_the_same_table(cli: RunCli) -> None:
    assert cli("role", "list").stdout == cli("roles", "list").stdout


def test_roles_show_planner_has_scenario_2_details(cli: RunCli) -> None:
    result = cli("roles", "show", "Planner")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Role: Planner (planner)" in out
    assert "Description: Task decomposition and planning." in out
    assert "  - read_file: Read the contents of a workspace file" in out
    # Spec 000's Planner has semantic_search; spec 001 adds the symbol tools (issue 38).
    assert "  - semantic_search: Search the workspace by meaning" in out
    assert "  - search_code: Find the definitions of a symbol" in out
    assert "  - find_references: Find where a symbol" in out
    assert "  - Cannot modify files (read-only access)" in out
    assert "  - Must not provide implementation details (focus on WHAT, not HOW)" in out
    assert "Prompt Key: roles/planner" in out
    assert "Context Strategy: broad" in out
    assert "  - → Coder (when the session has a plan)" in out
    assert "You are" not in out  # the prompt only with --include-prompt


def test_roles_show_include_prompt_prints_the_composed_prompt(cli: RunCli) -> None:
    result = cli("role", "show", "planner", "--include-prompt")
    assert result.exit_code == 0, result.output
    assert "Prompt (pack acode-standard: system + roles/planner" in result.stdout
    assert "You are the Planner agent" in result.stdout
    data = json.loads(cli("roles", "show", "planner", "--include-prompt", "--json").stdout)
    assert data["prompt"]["components"][:2] == ["system", "roles/planner"]


def test_unknown_role_exits_3_with_the_known_roles(cli: RunCli) -> None:
    result = cli("roles", "show", "wizard")
    assert result.exit_code == 3
    assert "[ERROR] ACODE-ROL-001 Invalid role specified" in result.stderr
    assert "Known roles: Default, Planner, Coder" in result.stderr
    assert "Suggestion: Use one of the roles listed" in result.stderr
    assert result.stdout == ""


def test_roles_export_and_import_round_trip(admin_cli: RunCli, tmp_path: Path) -> None:
    file = tmp_path / "roles.yaml"
    result = admin_cli("roles", "export", str(file))
    assert result.exit_code == 0, result.output
    assert f"Wrote role definitions to {file}" in result.stdout
    document = yaml.safe_load(file.read_text())
    assert document["format"] == "acode-roles/1"
    planner = next(r for r in document["roles"] if r["slug"] == "planner")
    planner["description"] = "Plans only."
    file.write_text(yaml.safe_dump(document, sort_keys=False))
    imported = admin_cli("roles", "import", str(file))
    assert imported.exit_code == 0, imported.output
    assert f"Imported {len(document['roles'])} roles" in imported.stdout  # every seeded role
    assert "New role versions: planner v2" in imported.stdout
    assert "Description: Plans only." in admin_cli("roles", "show", "planner").stdout


def test_roles_export_to_stdout_is_plain_yaml(cli: RunCli) -> None:
    result = cli("roles", "export")
    assert result.exit_code == 0
    assert yaml.safe_load(result.stdout)["format"] == "acode-roles/1"


def test_roles_import_needs_permission(cli: RunCli, tmp_path: Path) -> None:
    file = tmp_path / "roles.yaml"
    file.write_text(cli("roles", "export").stdout)
    result = cli("roles", "import", str(file))
    assert result.exit_code == 5
    assert "ACODE-API-403" in result.stderr


def test_roles_import_lists_problems_and_writes_nothing(admin_cli: RunCli, tmp_path: Path) -> None:
    file = tmp_path / "bad.yaml"
    file.write_text("format: acode-roles/1\nroles:\n- slug: x\n  parent: nowhere\n")
    result = admin_cli("roles", "import", str(file))
    assert result.exit_code == 2
    assert "ACODE-IMP-001" in result.stderr
    assert "Problems:" in result.stderr
    assert "roles/0: 'name' is a required property" in result.stderr
    assert admin_cli("roles", "show", "x").exit_code == 3


def test_roles_import_missing_file_is_a_usage_error(admin_cli: RunCli, tmp_path: Path) -> None:
    result = admin_cli("roles", "import", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2
    assert "Cannot read" in result.stderr
