"""The denial of a tool the role lacks, as the spec's verification step 5 shows it."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from roles.access import WithheldTool
from roles.commands.workspace import KnownWorkspace
from roles.decision import decide
from roles.decision.denial import Edge, RoleNode, role_denial, transition_paths
from roles.decision.facts import HostFacts
from roles.registry import registry

pytestmark = pytest.mark.django_db

SPEC_DENIAL = """[ERROR] Tool 'write_file' is not available in current role: Planner

Role Constraint Violation:
  Current Role: Planner
  Attempted Tool: write_file
  Constraint: Cannot modify files

Suggestion: Transition to Coder role to make file changes.

Details: missing permission write_files."""


def test_planner_write_file_is_denied_with_the_specs_text() -> None:
    decision = decide(
        registry.get("planner"),
        "write_file",
        {"path": "test.txt", "content": "hello"},
        host=HostFacts(),
        workspace=KnownWorkspace(),
    )
    assert (decision.allowed, decision.code, decision.rule) == (
        False,
        "ACODE-ROL-003",
        "effective_tools",
    )
    assert decision.reason == SPEC_DENIAL
    assert decision.suggestion == "Transition to Coder role to make file changes."


def test_reviewer_execute_command_suggests_coder_for_commands() -> None:
    decision = decide(
        registry.get("reviewer"),
        "execute_command",
        {"argv": ["ls"]},
        host=HostFacts(),
        workspace=KnownWorkspace(),
    )
    assert "  Constraint: Cannot execute commands" in decision.reason
    assert decision.suggestion == "Transition to Coder role to execute commands."


NODES = [
    RoleNode("default", "Default", frozenset({"read_file", "write_file"})),
    RoleNode("auditor", "Auditor", frozenset({"read_file"})),
    RoleNode("triage", "Triage", frozenset({"read_file"})),
    RoleNode("fixer", "Fixer", frozenset({"read_file", "write_file"})),
]


def test_the_nearest_explicit_rule_wins_over_the_way_back_to_default() -> None:
    edges = [Edge("auditor", "default", implicit=True), Edge("auditor", "fixer")]
    route = transition_paths("auditor", NODES, edges)["write_file"]
    assert (route.role, route.through) == ("Fixer", ())


def test_a_role_two_transitions_away_is_named_with_the_way_there() -> None:
    edges = [Edge("auditor", "triage"), Edge("triage", "fixer")]
    route = transition_paths("auditor", NODES, edges)["write_file"]
    withheld = WithheldTool("write_file", "", "missing permission write_files", ("write_files",))
    _, suggestion = role_denial("Auditor", "write_file", withheld, route)
    assert suggestion == "Transition to Fixer role (through Triage) to make file changes."


def test_no_reachable_role_says_whom_to_ask() -> None:
    assert "write_file" not in transition_paths("auditor", NODES, [])
    withheld = WithheldTool("write_file", "", "missing permission write_files", ("write_files",))
    text, suggestion = role_denial("Auditor", "write_file", withheld, None)
    assert suggestion == (
        "No role this session can transition to has write_file; ask an admin who may change "
        "roles to grant it to a role you can reach."
    )
    assert text.startswith("[ERROR] Tool 'write_file' is not available in current role: Auditor")


def test_the_check_api_gives_the_denial_a_job_would_get(api: APIClient) -> None:
    body = {"tool": "write_file", "arguments": {"path": "test.txt", "content": "hello"}}
    answer = api.post("/api/roles/Planner/check/", body, format="json")
    assert answer.status_code == 200
    data = answer.json()
    assert (data["outcome"], data["code"], data["rule"]) == (
        "deny",
        "ACODE-ROL-003",
        "effective_tools",
    )
    assert data["reason"] == SPEC_DENIAL
    assert data["suggestion"] == "Transition to Coder role to make file changes."
    allowed = api.post("/api/roles/coder/check/", body, format="json").json()
    assert (allowed["outcome"], allowed["reason"], allowed["suggestion"]) == ("allow", "", "")
    unknown = api.post("/api/roles/wizard/check/", body, format="json")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "ACODE-ROL-001")
    assert unknown.json()["message"].startswith("Invalid role specified: 'wizard' is not a role.")
