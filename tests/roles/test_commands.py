"""Command rules: structured rules allow only what they list; legacy globs still work."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from roles.commands import command_rule_check, command_rule_problems, rule_label

PYTEST_RULE: dict[str, Any] = {
    "program": "python",
    "module": "pytest",
    "options": {
        "-q": None,
        "-x": None,
        "-k": "text",
        "--maxfail": "int",
        "--junitxml": "path",
        "--tb": ["short", "line", "no"],
    },
    "args": "paths",
}
MAKE_RULE: dict[str, Any] = {"program": "make", "subcommands": ["test", "lint check"]}
GO_RULE: dict[str, Any] = {"program": "go", "subcommands": ["test"], "args": "text"}
RULES = [PYTEST_RULE, MAKE_RULE, GO_RULE]
LEGACY = ["pytest", "pytest *", "python -m pytest", "python -m pytest *", "make test"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_a.py").write_text("def test_a(): pass\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "escape")
    return root


@pytest.mark.parametrize(
    "argv",
    [
        ["python", "-m", "pytest"],
        ["python", "-m", "pytest", "-q", "-x"],
        ["python", "-m", "pytest", "-qx"],  # flags the rule allows, written together
        ["python", "-m", "pytest", "-k", "login and not slow"],
        ["python", "-m", "pytest", "-klogin"],
        ["python", "-m", "pytest", "--maxfail=2", "--maxfail", "3"],
        ["python", "-m", "pytest", "--junitxml=reports/out.xml"],
        ["python", "-m", "pytest", "--junitxml", "./out.xml"],
        ["python", "-m", "pytest", "--tb=short"],
        ["python", "-m", "pytest", "tests/test_a.py::test_a", "tests"],
        ["python", "-m", "pytest", "--", "tests/test_a.py"],
        ["make", "test"],
        ["make", "lint", "check"],
        ["go", "test", "./..."],
    ],
)
def test_structured_rules_allow_what_they_list(ws: Path, argv: list[str]) -> None:
    check = command_rule_check(argv, RULES, ws)
    assert check.allowed, check.reason
    assert check.rule.startswith("command_rules[")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["python", "-m", "pytest", "-p", "evil_plugin"], "option '-p' is not allowed"),
        (["python", "-m", "pytest", "-pevil"], "option '-pevil' is not allowed"),
        (["python", "-m", "pytest", "--basetemp=/tmp/x"], "'--basetemp=/tmp/x' is not allowed"),
        (["python", "-m", "pytest", "--basetemp", "src"], "is not allowed"),
        (["python", "-m", "pytest", "--junitxml=/etc/cron.d/x"], "relative to the workspace"),
        (["python", "-m", "pytest", "--junitxml=../x.xml"], "must not contain '..'"),
        (["python", "-m", "pytest", "--junitxml=~/x.xml"], "relative to the workspace"),
        (["python", "-m", "pytest", "--junitxml=.git/hooks/pre-commit"], "inside .git"),
        (["python", "-m", "pytest", "--junitxml=escape/x.xml"], "symbolic link"),
        (["python", "-m", "pytest", "--junitxml"], "needs a value"),
        (["python", "-m", "pytest", "--maxfail=many"], "whole number"),
        (["python", "-m", "pytest", "--tb=long"], "accepts only short, line, no"),
        (["python", "-m", "pytest", "-q=1"], "'-q=1' is not allowed"),
        (["python", "-m", "pytest", "-qk"], "'-qk' is not allowed"),  # -k takes a value
        (["python", "-m", "pytest", "/etc/passwd"], "relative to the workspace"),
        (["python", "-m", "pytest", "../outside/test_x.py"], "must not contain '..'"),
        (["python", "-m", "pytest", "@/proc/1/environ"], "@file arguments are refused"),
        (["python", "-m", "pytest", "-k", "@args"], "@file arguments are refused"),
        (["python", "-m", "pip", "install", "x"], "may run only as python -m pytest"),
        (["python", "-c", "import os"], "may run only as python -m pytest"),
        (["python"], "may run only as python -m pytest"),
        (["make"], "may run only the subcommands test, lint check"),
        (["make", "install"], "may run only the subcommands"),
        (["make", "test", "SHELL=/bin/sh"], "takes no arguments"),
        (["make", "-f", "other.mk", "test"], "subcommands"),
        (["go", "run", "."], "may run only the subcommands test"),
        (["./script.sh"], "no command rule allows './script.sh'"),
        (["/usr/bin/python", "-m", "pytest"], "no command rule allows"),
        (["sh", "-c", "pytest"], "no command rule allows 'sh'"),
    ],
)
def test_structured_rules_refuse_anything_else(ws: Path, argv: list[str], says: str) -> None:
    check = command_rule_check(argv, RULES, ws)
    assert not check.allowed
    assert says in check.reason


def test_a_refusal_names_the_rule_that_decided(ws: Path) -> None:
    check = command_rule_check(["python", "-m", "pytest", "-p", "x"], RULES, ws)
    assert check.rule == "command_rules[0]: python -m pytest"
    none = command_rule_check(["curl", "x"], RULES, ws)
    assert none.rule == "command_rules" and "allowed programs: go, make, python" in none.reason
    at_file = command_rule_check(["python", "-m", "pytest", "@x"], RULES, ws)
    assert at_file.rule == "argument_file"


def test_listed_plugin_option_is_allowed(ws: Path) -> None:
    rule = {**PYTEST_RULE, "options": {"-p": ["no:cacheprovider"]}}
    assert command_rule_check(["python", "-m", "pytest", "-p", "no:cacheprovider"], [rule], ws)[0]
    assert not command_rule_check(["python", "-m", "pytest", "-p", "evil"], [rule], ws)[0]


def test_no_rules_allow_any_command(ws: Path) -> None:
    check = command_rule_check(["sh", "-c", "anything"], [], ws)
    assert check.allowed and check.rule == "no command rules"


@pytest.mark.parametrize(
    "argv",
    [
        ["pytest"],
        ["pytest", "-q", "tests"],
        ["python", "-m", "pytest"],
        ["python", "-m", "pytest", "-x", "-c", "setup.cfg"],  # pytest's -c, after the module
        ["make", "test"],
    ],
)
def test_legacy_patterns_still_allow(ws: Path, argv: list[str]) -> None:
    check = command_rule_check(argv, LEGACY, ws)
    assert check.allowed, check.reason


@pytest.mark.parametrize(
    ("argv", "rules", "says"),
    [
        (["python", "-c", "import os"], ["python *"], "python -c runs code"),
        (["python", "-Bc", "import os"], ["python *"], "python -c runs code"),
        (["python3.11", "-I", "-c", "x"], ["python3.11 *"], "-c runs code"),
        (["python", "-m", "pip"], ["python *"], "runs a module the rule does not name"),
        (["python", "-mpip"], ["python *"], "runs a module the rule does not name"),
        (["python", "-W", "ignore", "-m", "pip"], ["python *"], "runs a module"),
        (["python", "-m", "pip"], ["python -m *"], "runs a module the rule does not name"),
        (["python", "-B", "-m", "pytest"], LEGACY, "does not match the pattern"),
        (["perl", "-e", "system(1)"], ["perl *"], "perl -e runs code"),
        (["perl", "-ne", "print"], ["perl *"], "perl -e runs code"),
        (["perl", "-MPOSIX", "x.pl"], ["perl *"], "perl -M runs code"),
        (["ruby", "-e", "x"], ["ruby *"], "ruby -e runs code"),
        (["node", "--eval=process.exit()"], ["node *"], "node --eval runs code"),
        (["node", "-p", "1"], ["node *"], "node -p runs code"),
        (["bash", "-lc", "id"], ["bash *"], "bash -c runs code"),
        (["sh", "-c", "id"], ["sh *"], "sh -c runs code"),
        (["php", "-r", "x"], ["php *"], "php -r runs code"),
        (["pytest", "@/proc/1/environ"], LEGACY, "@file arguments are refused"),
        (["python -m pytest"], LEGACY, "no command rule allows"),  # one argument, not three
        (["pytestx"], LEGACY, "no command rule allows"),
    ],
)
def test_legacy_patterns_refuse_code_execution_flags(
    ws: Path, argv: list[str], rules: list[str], says: str
) -> None:
    check = command_rule_check(argv, rules, ws)
    assert not check.allowed
    assert says in check.reason


def test_interpreter_options_after_the_script_are_the_scripts(ws: Path) -> None:
    assert command_rule_check(["python", "tool.py", "-c", "x"], ["python *"], ws).allowed
    assert command_rule_check(["perl", "t.pl", "-e"], ["perl *"], ws).allowed


def test_rule_labels_are_short_and_readable() -> None:
    assert rule_label(0, PYTEST_RULE) == "command_rules[0]: python -m pytest"
    assert rule_label(1, MAKE_RULE) == "command_rules[1]: make test|lint check"
    assert rule_label(2, "pytest *") == "command_rules[2]: pytest *"


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ("", "must not be empty"),
        (42, "pattern string or an object"),
        ({"program": "/bin/sh"}, "bare program name"),
        ({"program": "python", "module": "x; y"}, "Python module name"),
        ({"program": "make", "subcommands": ["-f"]}, "list of words"),
        ({"program": "pytest", "options": {"q": None}}, "must look like -x"),
        ({"program": "pytest", "options": {"-q": "float"}}, "value kind"),
        ({"program": "pytest", "args": "anything"}, "args must be"),
        ({"program": "pytest", "shell": True}, "unknown keys shell"),
    ],
)
def test_bad_rules_are_described(rule: Any, problem: str) -> None:
    assert any(problem in p for p in command_rule_problems(rule))


def test_good_rules_have_no_problems() -> None:
    for rule in [*RULES, *LEGACY]:
        assert command_rule_problems(rule) == []
