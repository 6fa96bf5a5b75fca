"""``acode role replay``: a readable preview of a role change; bad input exits non-zero."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessions_app.models import AuditEventType
from sessions_app.services.audit import audit_record
from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)


def _denied_write() -> int:
    details = {"tool": "write_file", "rule": "effective_tools", "code": "ACODE-ROL-003",
               "phase": "decision", "arguments": "s",
               "replay": {"arguments": {"path": "src/a.py", "content": "x"}}}  # fmt: skip
    event = audit_record(event_type=AuditEventType.TOOL_DENIED, actor="job:t", role="tester",
                         target="write_file src/a.py", result="ACODE-ROL-003", details=details)  # fmt: skip
    return int(event.pk)


def test_role_replay_prints_what_a_draft_would_change(admin_cli: RunCli, tmp_path: Path) -> None:
    row = _denied_write()
    draft = tmp_path / "draft.yaml"
    draft.write_text("permissions: [read_files, write_files, execute_commands]\n")
    result = admin_cli("role", "replay", "Tester", "--file", str(draft),
                       "--set", "write_paths=[src/**, tests/**]")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Role tester: 1 recorded decision(s), the beginning to now" in result.stdout
    assert "0 allowed -> denied, 1 denied -> allowed" in result.stdout
    assert (
        "denied->allowed  write_file: 1 (recorded rule 'effective_tools', now "
        "'write_paths: src/**')"
    ) in result.stdout
    assert f"audit #{row} write_file src/a.py" in result.stdout
    assert "FAIL tester examples[0]" in result.stdout  # the draft breaks its own example
    as_json = admin_cli("role", "replay", "tester", "--set", "examples=[]", "--json")
    assert json.loads(as_json.stdout)["decisions"] == 1


def test_role_replay_bad_input_exits_with_the_error(admin_cli: RunCli) -> None:
    unknown = admin_cli("role", "replay", "nobody")
    assert unknown.exit_code != 0 and "ACODE-ROL-001" in unknown.output
    window = admin_cli("role", "replay", "tester", "--since", "yesterday")
    assert window.exit_code == 2 and "ACODE-ROL-014" in window.output
    bad_set = admin_cli("role", "replay", "tester", "--set", "nokey")
    assert bad_set.exit_code == 2 and "key=value" in bad_set.output
