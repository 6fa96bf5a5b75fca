"""``acode plan show|set|step`` and ``acode changes show|approve`` against the API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessions_app.models import AgentSession, AuditEvent
from sessions_app.services.changes import change_record
from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)

DIFF = "--- /dev/null\n+++ b/auth.py\n@@ -0,0 +1 @@\n+SECRET_HEADER = 'Authorization'\n"


def test_plan_set_from_arguments_then_show_and_mark_a_step(cli: RunCli, session_id: str) -> None:
    empty = cli("plan", "show")
    assert empty.exit_code == 0 and empty.stdout.startswith("No plan.")
    result = cli("plan", "set", "Create AuthService", "Add login endpoint")
    assert result.exit_code == 0, result.output
    assert "[SUCCESS] Plan set: 2 steps." in result.stdout
    assert "· Step 1: Create AuthService (pending)" in result.stdout
    marked = cli("plan", "step", "1", "--status", "done")
    assert marked.exit_code == 0, marked.output
    assert "Step 1: Create AuthService is now done." in marked.stdout
    shown = cli("plan", "show")
    assert "Plan: 1/2 steps complete" in shown.stdout
    assert "✓ Step 1: Create AuthService (done)" in shown.stdout
    assert "· Step 2: Add login endpoint (pending)" in shown.stdout
    steps = json.loads(cli("plan", "show", "--json").stdout)
    assert [s["status"] for s in steps] == ["done", "pending"]
    assert "Active Plan: 1/2 steps complete" in cli("status").stdout


def test_plan_set_from_yaml_and_json_files(cli: RunCli, session_id: str, tmp_path: Path) -> None:
    plan_yaml = tmp_path / "plan.yaml"
    plan_yaml.write_text(
        "steps:\n"
        "  - title: Add PasswordValidator class\n"
        "    files: [users/validators.py]\n"
        "  - title: Call it from User.set_password\n"
        "    depends_on: [1]\n"
    )
    result = cli("plan", "set", "--file", str(plan_yaml))
    assert result.exit_code == 0, result.output
    assert "Files: users/validators.py" in result.stdout
    assert "Depends on: step 1" in result.stdout
    plan_json = tmp_path / "plan.json"
    plan_json.write_text(json.dumps(["Only step"]))
    assert cli("plan", "set", "-f", str(plan_json)).exit_code == 0
    session = AgentSession.objects.get(pk=session_id)
    assert [s["title"] for s in session.plan] == ["Only step"]


def test_bad_plans_are_refused_with_their_codes(
    cli: RunCli, session_id: str, tmp_path: Path
) -> None:
    neither = cli("plan", "set")
    assert neither.exit_code == 2 and "either as arguments or with --file" in neither.stderr
    broken = tmp_path / "plan.json"
    broken.write_text("{not json")
    bad_file = cli("plan", "set", "--file", str(broken))
    assert bad_file.exit_code == 2 and "is not valid JSON" in bad_file.stderr
    no_list = tmp_path / "plan.yaml"
    no_list.write_text("title: one\n")
    assert "holds no list of steps" in cli("plan", "set", "-f", str(no_list)).stderr
    blank = cli("plan", "set", "  ")
    assert blank.exit_code == 2 and "ACODE-SES-004" in blank.stderr
    cli("plan", "set", "One")
    missing = cli("plan", "step", "5", "--status", "done")
    assert missing.exit_code == 3 and "ACODE-API-404" in missing.stderr  # no step 5
    bad_status = cli("plan", "step", "1", "--status", "finished")
    assert bad_status.exit_code == 2


def test_changes_show_with_diff_and_approve_in_reviewer(cli: RunCli, session_id: str) -> None:
    assert cli("changes", "show").stdout.strip() == "No pending changes."
    session = AgentSession.objects.get(pk=session_id)
    (Path(session.workspace) / "auth.py").write_text("SECRET_HEADER = 'Authorization'\n")
    change_record(session=session, path="auth.py", kind="created", diff=DIFF, actor="test")
    shown = cli("changes", "show", "--diff")
    assert shown.exit_code == 0, shown.output
    assert "Pending changes: 1 file" in shown.stdout
    assert "created   auth.py  (by default" in shown.stdout
    assert "+SECRET_HEADER = 'Authorization'" in shown.stdout  # markup-like text verbatim
    listed = json.loads(cli("changes", "show", "--json").stdout)
    assert [(c["path"], c["kind"]) for c in listed] == [("auth.py", "created")]

    assert cli("role", "set", "Planner", "--reason", "Plan first").exit_code == 0
    refused = cli("changes", "approve")
    assert refused.exit_code == 5
    assert "ACODE-ROL-003" in refused.stderr and "role Planner" in refused.stderr

    assert cli("role", "set", "Default", "--reason", "Back").exit_code == 0
    assert cli("role", "set", "Reviewer", "--reason", "Review auth.py").exit_code == 0
    approved = cli("changes", "approve", "--summary", "Add the auth header name")
    assert approved.exit_code == 0, approved.output
    assert "Approving 1 pending change (digest " in approved.stdout
    # The truth: a change described by hand carries no content, so nothing is committed.
    assert (
        "[SUCCESS] Approved 1 pending change; nothing was committed: changes described by "
        "hand carry no content." in approved.stdout
    )
    assert cli("changes", "show").stdout.strip() == "No pending changes."
    assert AuditEvent.objects.filter(session=session, event_type="ChangesApproved").exists()
