"""Command rules read argv, not shell: an argument is data; a shell is judged as a shell;
the seeded Tester accepts its runners' common options; a refusal names the closest rule
and what is allowed (pure: no database)."""

from __future__ import annotations

from typing import Any

import pytest

from roles.access import ToolSpec, compute_access
from roles.commands import command_rule_check
from roles.commands.workspace import KnownWorkspace
from roles.decision import HostFacts, RoleView, check_argv, decide
from roles.decision.examples import role_examples_run
from roles.portability.definitions import SEED_FILE
from roles.portability.document import load_yaml
from roles.tools import declared_tools
from roles.validation import role_spec

TOOLS = [ToolSpec(t, t.description, True) for t in declared_tools().values()]
GREP_RULE: dict[str, Any] = {
    "program": "grep",
    "options": {"-n": None, "-F": None, "-r": None, "-e": "text"},
    "args": "text",
}


def _seeded(slug: str) -> RoleView:
    specs = {s.slug: s for s in (role_spec(r) for r in load_yaml(SEED_FILE.read_text())["roles"])}
    return RoleView(specs[slug], compute_access(slug, specs, TOOLS))


def _role(rules: list[Any]) -> RoleView:
    spec = role_spec({"slug": "r", "name": "R", "permissions": ["read_files", "execute_commands"],
                      "command_patterns": rules})  # fmt: skip
    return RoleView(spec, compute_access("r", {"r": spec}, TOOLS))


def _run(role: RoleView, argv: list[str]) -> Any:
    return decide(role, "execute_command", {"argv": argv}, host=HostFacts(),
                  workspace=KnownWorkspace())  # fmt: skip


@pytest.mark.parametrize("token", ["|", ">", ";", "&&", "||", "<", ">>", "2>&1", "&"])
def test_an_argument_that_looks_like_shell_syntax_is_just_an_argument(token: str) -> None:
    assert check_argv(["grep", "-F", token, "f"]) == ["grep", "-F", token, "f"]


def test_grep_for_a_pipe_is_allowed_where_grep_is() -> None:
    argv = ["grep", "-n", "-F", "|", "data/sample.csv"]
    decision = _run(_role([GREP_RULE]), argv)
    assert decision.allowed, decision.reason
    assert decision.normalised["argv"] == argv
    assert _run(_role([]), argv).allowed  # no rules: any command, contained by the sandbox


def test_a_command_that_runs_a_shell_is_judged_as_a_shell() -> None:
    role = _role([GREP_RULE, {"program": "sh", "args": "text"}])
    refused = _run(role, ["sh", "-c", "grep x f | tee out"])
    assert not refused.allowed and "sh -c runs code given as text" in refused.reason
    assert _run(role, ["sh", "scripts/check.sh"]).allowed  # a script file is not -c


@pytest.mark.parametrize(
    "argv",
    [
        ["pytest", "-qx"],
        ["pytest", "-vv"],
        ["pytest", "-rA"],
        ["pytest", "-q", "-x", "-rA", "--tb=short", "tests/test_a.py::test_one"],
        ["python", "-m", "pytest", "-qx", "-vv", "--maxfail=1", "-k", "not slow", "tests"],
        ["python", "-m", "unittest", "discover", "-s", "tests", "-p", "test_*.py"],
        ["python", "-m", "unittest", "discover", "-v", "-s", "tests", "-t", "."],
        ["python", "-m", "unittest", "-v", "tests.test_app"],
        ["go", "test", "-count", "1", "-run", "TestX", "./..."],
    ],
)
def test_the_seeded_tester_accepts_its_runners_common_options(argv: list[str]) -> None:
    decision = _run(_seeded("tester"), argv)
    assert decision.allowed, decision.reason


def test_the_seeded_testers_examples_show_it_and_all_pass() -> None:
    results = role_examples_run(_seeded("tester"))
    assert all(r.passed for r in results), [r.message() for r in results if not r.passed]
    calls = " ".join(r.example.call for r in results)
    assert "-qx" in calls and "-rA" in calls and "discover" in calls


def test_a_refusal_names_the_closest_rule_and_what_is_allowed() -> None:
    decision = _run(_seeded("tester"), ["python", "-m", "unittest", "discover", "--bogus"])
    assert not decision.allowed
    assert decision.rule.startswith("command_rules[2]: python -m unittest discover")
    assert "option '--bogus' is not allowed for python" in decision.reason
    assert "python may run only as python -m pytest" not in decision.reason
    assert "allowed: " in decision.reason and "python -m pytest [" in decision.reason
    assert "python -m unittest discover [" in decision.reason


def test_a_refusal_for_a_module_no_rule_names_lists_the_modules_allowed() -> None:
    check = command_rule_check(
        ["python", "-m", "http.server"],
        _seeded("tester").spec.command_patterns,
        KnownWorkspace(),
    )
    assert not check.allowed
    assert "python -m pytest" in check.reason and "python -m unittest" in check.reason
