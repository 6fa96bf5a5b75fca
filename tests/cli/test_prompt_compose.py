"""``acode prompt compose``: the composed prompt, and with --verbose each part's source
and size."""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)


def test_prompt_compose_prints_the_layers_in_order(cli: RunCli) -> None:
    result = cli("prompt", "compose", "--role", "coder", "--language", "csharp",
                 "--framework", "aspnetcore")  # fmt: skip
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.index("You are the Coder agent") < out.index("The workspace uses C#.")
    assert out.index("The workspace uses C#.") < out.index("The project uses ASP.NET Core.")
    assert out.index("The project uses ASP.NET Core.") < out.index("## Role in force: Coder")


def test_prompt_compose_verbose_shows_each_part_its_source_and_tokens(cli: RunCli) -> None:
    result = cli("prompt", "compose", "--role", "Coder", "-l", "python", "-l", "rust", "--verbose")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Composed prompt for Coder from pack acode-standard:" in out
    for layer, key in (("system", "system"), ("role", "roles/coder"),
                       ("language", "languages/python"), ("constraints", "constraints")):  # fmt: skip
        assert layer in out and key in out
    assert "pack acode-standard" in out and "generated from the role" in out
    assert "Note: Pack 'acode-standard' has no language layer for 'rust'." in out
    assert "The workspace uses Python." in out


def test_prompt_compose_json_and_unknown_role(cli: RunCli) -> None:
    result = cli("prompt", "compose", "--role", "planner", "--framework", "django", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["components"] == ["system", "roles/planner", "frameworks/django", "constraints"]
    assert [p["layer"] for p in data["parts"]][2] == "framework"
    assert data["tokens"] >= sum(p["tokens"] for p in data["parts"]) - 5
    missing = cli("prompt", "compose", "--role", "wizard")
    assert missing.exit_code != 0
    assert "ACODE-ROL-001" in missing.stderr
