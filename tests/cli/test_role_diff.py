"""``acode role diff``: what a change grants and takes, with counterexamples, in words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)


def test_role_diff_prints_the_gains_with_counterexamples(admin_cli: RunCli, tmp_path: Path) -> None:
    draft = tmp_path / "draft.yaml"
    draft.write_text("permissions: [read_files, write_files, execute_commands]\n")
    result = admin_cli("role", "diff", "Tester", "--file", str(draft),
                       "--set", "write_paths=[src/**, tests/**]", "--set", "examples=[]")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Role tester: grants" in result.stdout
    assert "effective_permissions: gain permission write_files" in result.stdout
    assert "write_file(content='probe', path='src/0') deny -> allow" in result.stdout
    assert "Replay: 0 recorded decision(s)" in result.stdout
    failing = admin_cli("role", "diff", "tester", "--set", "max_llm_calls=99", "--fail-on-gain")
    assert failing.exit_code == 1 and "max_llm_calls raised" in failing.stdout
    narrowed = admin_cli("role", "diff", "tester", "--set", "max_llm_calls=1", "--json")
    data = json.loads(narrowed.stdout)
    assert data["diff"]["widens"] is False and data["diff"]["narrowings"]
