from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from django.db import connection

from sessions_app.models import AgentSession, AuditEvent
from sessions_app.services.changes import change_record
from sessions_app.services.plans import plan_set
from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)

TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"


@pytest.fixture
def workflow(cli: RunCli, session_id: str) -> str:
    """Scenario 9's transitions: Default → Planner → Coder → Reviewer."""
    assert cli("role", "set", "Planner", "--reason", "Test audit").exit_code == 0
    session = AgentSession.objects.get(pk=session_id)
    plan_set(session=session, steps=["Write a test file"])
    assert cli("role", "set", "Coder", "--reason", "Test implementation").exit_code == 0
    change_record(session=session, path="test.txt", kind="created", diff="+hello")
    assert cli("role", "set", "Reviewer", "--reason", "Test review").exit_code == 0
    return session_id


def test_scenario_9_audit_search_lists_role_transitions(cli: RunCli, workflow: str) -> None:
    result = cli("audit", "search", "--event-type", "RoleTransition")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("Audit Log: Role Transitions\n")
    assert re.search(
        rf"\[{TIME}\] Default → Planner\n  Reason: Test audit\n"
        rf"  Session ID: {workflow[:8]}\n  User: dev\n",
        out,
    ), out
    assert (
        out.index("Default → Planner")
        < out.index("Planner → Coder")
        < out.index("Coder → Reviewer")
    )
    assert out.rstrip().endswith("Total: 3 transitions")


def test_audit_search_filters(cli: RunCli, workflow: str) -> None:
    last = json.loads(
        cli("audit", "search", "-e", "RoleTransition", "--last", "1", "--json").stdout
    )
    assert [e["details"]["to_role"] for e in last] == ["reviewer"]
    other = json.loads(cli("session", "new", "Other", "--json").stdout)["id"]
    cli("role", "set", "planner", "--reason", "elsewhere", "--session", other)
    mine = json.loads(
        cli("audit", "search", "-e", "RoleTransition", "--session", workflow[:8], "--json").stdout
    )
    assert len(mine) == 3 and {e["session"] for e in mine} == {workflow}
    planner = json.loads(
        cli("audit", "search", "--role", "planner", "--since", "1h", "--json").stdout
    )
    assert planner and {e["role"] for e in planner} == {"planner"}
    future = cli("audit", "search", "--since", "2999-01-01T00:00:00Z")
    assert future.exit_code == 0
    assert "Total: 0 events" in future.stdout


def test_audit_search_shows_refused_transitions(cli: RunCli, session_id: str) -> None:
    cli("role", "set", "reviewer", "--reason", "Skipping implementation")
    result = cli("audit", "search", "-e", "TransitionDenied")
    assert result.exit_code == 0, result.output
    assert "Refused: Default → Reviewer" in result.stdout
    assert "Error: ACODE-ROL-002" in result.stdout
    assert "Total: 1 refused transition" in result.stdout


def test_audit_search_bad_filters_are_usage_errors(cli: RunCli) -> None:
    bad_type = cli("audit", "search", "--event-type", "Bogus")
    assert bad_type.exit_code == 2
    assert "event_type" in bad_type.stderr
    bad_since = cli("audit", "search", "--since", "yesterday")
    assert bad_since.exit_code == 2
    assert "neither an ISO time nor an age" in bad_since.stderr


def test_audit_verify_ok_for_admin_and_refused_for_others(
    cli: RunCli, admin_cli: RunCli, workflow: str
) -> None:
    result = admin_cli("audit", "verify")
    assert result.exit_code == 0, result.output
    assert re.search(r"\[OK\] Audit chain intact: \d+ events checked\.", result.stdout)
    refused = cli("audit", "verify")
    assert refused.exit_code == 5
    assert "ACODE-API-403" in refused.stderr


def test_audit_verify_exits_8_when_the_chain_is_broken(admin_cli: RunCli, workflow: str) -> None:
    victim = AuditEvent.objects.filter(event_type="RoleTransition").order_by("seq").first()
    assert victim is not None
    with connection.cursor() as cursor:  # bypass the append-only guard, as an attacker would
        cursor.execute(
            f"UPDATE {AuditEvent._meta.db_table} SET actor = %s WHERE id = %s",
            ["mallory", victim.pk],
        )
    result = admin_cli("audit", "verify")
    assert result.exit_code == 8
    assert "[ERROR] Audit chain broken" in result.stderr
    assert f"seq {victim.seq}" in result.stderr
    assert admin_cli("audit", "verify", "--json").exit_code == 8


def test_audit_export_jsonl_and_csv(cli: RunCli, workflow: str, tmp_path: Path) -> None:
    target = tmp_path / "audit.jsonl"
    result = cli("audit", "export", "--format", "jsonl", "-e", "RoleTransition", "-o", str(target))
    assert result.exit_code == 0, result.output
    assert f"Wrote 3 events to {target} (jsonl)." in result.stdout
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["details"]["to_role"] for r in rows] == ["planner", "coder", "reviewer"]
    assert all(len(r["hash"]) == 64 for r in rows)
    csv_out = cli("audit", "export", "--format", "csv", "-e", "RoleTransition")
    assert csv_out.exit_code == 0, csv_out.output
    table = list(csv.DictReader(io.StringIO(csv_out.stdout)))
    assert [r["target"] for r in table] == ["default->planner", "planner->coder", "coder->reviewer"]


def test_audit_export_rejects_unknown_formats(cli: RunCli) -> None:
    result = cli("audit", "export", "--format", "xml")
    assert result.exit_code == 2


def test_audit_last_is_in_time_order_across_sessions(cli: RunCli, session_id: str) -> None:
    # The first session's chain runs ahead (its seq numbers grow faster) before the second
    # session's events: ordering by seq would interleave them.
    for role in ("planner", "default", "planner", "default"):
        assert cli("role", "set", role, "--reason", f"to {role}").exit_code == 0
    other = json.loads(cli("session", "new", "Other", "--json").stdout)["id"]
    assert cli("role", "set", "planner", "--reason", "later", "--session", other).exit_code == 0
    events = json.loads(cli("audit", "search", "--last", "6", "--json").stdout)
    times = [e["created_at"] for e in events]
    assert times == sorted(times) and len(events) == 6
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    assert events[-1]["session"] == other and events[-1]["event_type"] == "RoleTransition"
    assert [e["seq"] for e in events] != sorted(e["seq"] for e in events)  # seq is per session
    shown = cli("audit", "search", "--last", "6").stdout
    assert shown.rindex("Reason: later") > shown.rindex("Reason: to default")
