"""``acode tool check``: the denial the spec shows, without a model."""

from __future__ import annotations

import pytest

from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)


def test_planner_write_file_prints_the_specs_denial(cli: RunCli) -> None:
    args = ("--arguments", '{"path": "test.txt", "content": "hello"}')
    refused = cli("tool", "check", "write_file", "--role", "Planner", *args)
    assert refused.exit_code == 5
    assert refused.stdout.startswith(
        "[ERROR] Tool 'write_file' is not available in current role: Planner\n\n"
        "Role Constraint Violation:\n"
        "  Current Role: Planner\n"
        "  Attempted Tool: write_file\n"
        "  Constraint: Cannot modify files\n\n"
        "Suggestion: Transition to Coder role to make file changes.\n"
    )
    assert "Details: missing permission write_files. (ACODE-ROL-003)" in refused.stdout
    allowed = cli("tool", "check", "write_file", "--role", "Coder", *args)
    assert allowed.exit_code == 0, allowed.output
    assert allowed.stdout.startswith("[ALLOWED] write_file in role Coder")
