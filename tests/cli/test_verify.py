"""``acode verify``: the spec's verification steps that need no model, against the server."""

from __future__ import annotations

import pytest

from roles.models import Role
from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)


def test_verify_passes_every_step_that_needs_no_model(cli: RunCli) -> None:
    # A user without admin rights: every step reads what any user may, in their session.
    result = cli("verify", "roles")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Verifying Planner/Coder/Reviewer roles (spec task 009.a)")
    for number in (1, 2, 3, 5, 6, 7, 8, 9):
        assert any(line.startswith(f"PASS {number:>2}.") for line in lines), result.stdout
    assert any(line.startswith("SKIP  4. Complete workflow") for line in lines)
    assert "8 passed, 0 failed, 2 skipped" in result.stdout


def test_verify_fails_a_step_and_exits_1_when_the_server_differs(admin_cli: RunCli) -> None:
    Role.objects.filter(slug="planner").update(constraints=["Plan carefully"])
    result = admin_cli("verify", "--step", "2", "--step", "4")
    assert result.exit_code == 1
    assert (
        "FAIL  2. Show specific role details: Planner's constraints do not say "
        "'cannot modify files'"
    ) in result.stdout
    assert "0 passed, 1 failed, 1 skipped" in result.stdout


def test_verify_of_an_unknown_feature_is_a_usage_error(admin_cli: RunCli) -> None:
    result = admin_cli("verify", "feature-auth")
    assert result.exit_code == 2 and "known: roles" in result.stderr
