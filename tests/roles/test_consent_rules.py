"""The third outcome: a command rule may say a call runs only once a person consents
("outcome": "ask"); the decision says "ask", examples may expect it, the schema checks
it (pure: no database)."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

from roles.access import ToolSpec, compute_access
from roles.commands import COMMAND_RULE_SCHEMA, command_rule_problems
from roles.commands.workspace import KnownWorkspace
from roles.decision import CONSENT_NEEDED, HostFacts, RoleView, decide
from roles.decision.examples import role_examples_run
from roles.decision.replay import RecordedDecision, Replayed
from roles.tools import declared_tools
from roles.validation import role_spec

TOOLS = [ToolSpec(t, t.description, True) for t in declared_tools().values()]
ASK_RM: dict[str, Any] = {
    "program": "rm",
    "args": "paths",
    "outcome": "ask",
    "examples": [
        {"argv": ["rm", "build/out.txt"], "expect": "ask", "why": "Deleting needs a person."},
    ],
}
PYTEST: dict[str, Any] = {"program": "pytest", "options": {"-q": None}, "args": "paths"}


def _role(rules: list[Any], examples: list[Any] | None = None) -> RoleView:
    spec = role_spec({"slug": "r", "name": "R", "permissions": ["read_files", "execute_commands"],
                      "command_patterns": rules, "examples": examples or []})  # fmt: skip
    return RoleView(spec, compute_access("r", {"r": spec}, TOOLS))


def _decide(role: RoleView, argv: list[str], host: HostFacts | None = None) -> Any:
    return decide(role, "execute_command", {"argv": argv}, host=host or HostFacts(),
                  workspace=KnownWorkspace())  # fmt: skip


def test_a_rule_that_asks_gives_the_ask_outcome_with_what_would_run() -> None:
    role = _role([PYTEST, ASK_RM])
    decision = _decide(role, ["rm", "build/out.txt"])
    assert (decision.allowed, decision.ask, decision.outcome) == (False, True, "ask")
    assert decision.code == CONSENT_NEEDED and decision.rule == "command_rules[1]: rm"
    assert decision.declaration is not None and decision.arguments["argv"] == [
        "rm",
        "build/out.txt",
    ]
    assert "only once a person consents" in decision.reason
    assert _decide(role, ["pytest", "-q"]).outcome == "allow"
    assert _decide(role, ["rm", "/etc/passwd"]).outcome == "deny"  # the rule's own limits hold


def test_a_call_that_could_not_run_anyway_is_denied_not_asked() -> None:
    no_sandbox = HostFacts(sandbox_available=False, sandbox_reason="none")
    decision = _decide(_role([ASK_RM]), ["rm", "x"], no_sandbox)
    assert decision.outcome == "deny" and decision.rule == "sandbox"


def test_examples_may_expect_ask_and_fail_when_the_rule_no_longer_asks() -> None:
    assert all(r.passed for r in role_examples_run(_role([ASK_RM])))
    allows = {**ASK_RM, "outcome": "allow"}
    failed = [r for r in role_examples_run(_role([allows])) if not r.passed]
    assert len(failed) == 1
    assert "must be asked (a person consents first)" in failed[0].message()
    assert "but is allowed" in failed[0].message()


def test_the_outcome_is_checked_by_the_schema_and_the_rule_check() -> None:
    validator = Draft202012Validator(COMMAND_RULE_SCHEMA)
    assert validator.is_valid({"program": "rm", "outcome": "ask"})
    assert validator.is_valid({"program": "rm", "outcome": "allow"})
    assert not validator.is_valid({"program": "rm", "outcome": "maybe"})
    assert command_rule_problems({"program": "rm", "outcome": "ask"}) == []
    assert command_rule_problems({"program": "rm", "outcome": "maybe"}) == [
        "outcome must be allow or ask"
    ]


def test_replay_tells_a_call_that_was_asked_from_one_that_was_allowed() -> None:
    recorded = RecordedDecision(audit_id=1, at=None, tool="execute_command", allowed=False,
                                code=CONSENT_NEEDED, rule="command_rules[0]: rm",
                                arguments={"argv": ["rm", "x"]}, host={}, ask=True)  # fmt: skip
    asked = _decide(_role([ASK_RM]), ["rm", "x"])
    allowed = _decide(_role([{**ASK_RM, "outcome": "allow"}]), ["rm", "x"])
    assert Replayed(recorded, asked).change == "unchanged"
    assert Replayed(recorded, allowed).change == "asked->allowed"
