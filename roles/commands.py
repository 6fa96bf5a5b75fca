"""Command rules: which programs a role may run, and with which subcommands, options and arguments.

A structured rule is plain data, stored with the role::

    {"program": "python", "module": "pytest",
     "subcommands": [],
     "options": {"-q": None, "-x": None, "-k": "text", "--maxfail": "int",
                 "--junitxml": "path"},
     "args": "paths"}

``program`` is ``argv[0]`` exactly (a bare name, looked up on the sandbox's ``PATH``);
``module`` (optional) requires ``argv[1:3] == ["-m", module]``; ``subcommands`` (optional)
lists what must come next (``"test"``, or several words: ``"mod tidy"``); ``options`` maps
each allowed option to the kind of value it takes: ``None`` (a flag), ``"text"``, ``"int"``,
``"path"`` (relative, inside the workspace, no ``..``, never through a symbolic link or into
``.git``) or a list of literal values; ``args`` says what positional arguments may be:
``"none"`` (the default), ``"paths"`` (paths as above, pytest node ids allowed), ``"text"``
or a list of literal values. Anything a rule does not list is refused: an unknown option,
a plugin option (``-p``) it does not name, an ``@file`` argument anywhere (argparse reads
more arguments from such a file).

Legacy rules are glob strings matched against the joined argv (``"pytest *"``); their
leading literal words must be whole arguments. Whatever rule matched, an interpreter's
code-execution flags (``python -c``, ``-m`` other than the rule's own module, ``perl -e``,
``node --eval``, ``sh -c``...) are refused. A role with no rules may run any command: the
sandbox and the write check after the command contain it.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from acode.text import NOT_WHITESPACE_PATTERN, WHITESPACE

VALUE_KINDS = frozenset({"text", "int", "path"})
ARG_KINDS = frozenset({"none", "paths", "text"})
GLOB_CHARS = frozenset("*?[")
MAX_RULE_LABEL = 200

CommandRule = str | Mapping[str, Any]


class CommandCheck(NamedTuple):
    """The decision on one command: allowed or not, the rule that decided, and why."""

    allowed: bool
    rule: str
    reason: str


class _Interpreter(NamedTuple):
    code_letters: frozenset[str]  # single-letter options that run code given as text
    value_letters: frozenset[str]  # single-letter options that take a value (skip it)
    module_letter: str  # python's -m: allowed only for the rule's own module
    code_long: frozenset[str]  # long options that run code


def _spec(code: str, values: str, module: str = "", long: tuple[str, ...] = ()) -> _Interpreter:
    return _Interpreter(frozenset(code), frozenset(values), module, frozenset(long))


NODE_CODE_OPTIONS = ("--eval", "--print", "--require", "--import", "--loader")
_INTERPRETERS: list[tuple[re.Pattern[str], _Interpreter]] = [
    (re.compile(r"(python|pypy)[0-9.]*"), _spec("c", "WXQ", "m")),
    (re.compile(r"perl[0-9.]*"), _spec("eEMm", "IlCdD0x")),
    (re.compile(r"ruby[0-9.]*|irb"), _spec("e", "IrCE")),
    (re.compile(r"node(js)?|deno|bun"), _spec("ep", "r", long=NODE_CODE_OPTIONS)),
    (re.compile(r"php[0-9.]*"), _spec("rRBEF", "cdz")),
    (re.compile(r"lua(jit)?[0-9.]*|Rscript|tclsh[0-9.]*"), _spec("e", "l")),
    (re.compile(r"(ba|da|z|k|mk|a|c|tc|fi)?sh|busybox"), _spec("c", "o")),
]


def command_rule_check(
    argv: Sequence[str], rules: Sequence[CommandRule], workspace: Path
) -> CommandCheck:
    """Whether ``rules`` allow ``argv`` in ``workspace``: the first rule that does decides.

    No rules: any command (contained by the sandbox). Otherwise the refusal names the most
    specific problem found with a rule for the same program, or lists the allowed programs.
    """
    if not argv or not all(isinstance(a, str) for a in argv):
        return CommandCheck(False, "argv", "a command is a non-empty list of strings")
    if not rules:
        return CommandCheck(True, "no command rules", "the role may run any command")
    for arg in argv:
        if arg.startswith("@"):
            return CommandCheck(
                False, "argument_file",
                f"{arg!r}: @file arguments are refused (they read more arguments from a file)",
            )  # fmt: skip
    problems: list[tuple[str, str]] = []
    for index, rule in enumerate(rules):
        label = rule_label(index, rule)
        if isinstance(rule, str):
            problem = _legacy_problem(argv, rule)
        elif isinstance(rule, Mapping):
            problem = _structured_problem(argv, rule, workspace)
        else:
            problem = "not a command rule"
        if problem is None:
            return CommandCheck(True, label, f"allowed by {label}")
        if problem:  # "" means: the rule is for another program
            problems.append((label, problem))
    if problems:
        label, problem = problems[0]
        return CommandCheck(False, label, f"{problem} ({label})")
    programs = sorted({_rule_program(rule) for rule in rules} - {""})
    return CommandCheck(
        False,
        "command_rules",
        f"no command rule allows {argv[0]!r}; allowed programs: {', '.join(programs) or 'none'}",
    )


def rule_label(index: int, rule: CommandRule) -> str:
    """A short name of a rule for reasons and audit rows: ``command_rules[1]: python -m pytest``."""
    if isinstance(rule, str):
        text = rule
    elif isinstance(rule, Mapping):
        words = [str(rule.get("program", "?"))]
        if rule.get("module"):
            words += ["-m", str(rule["module"])]
        subcommands = rule.get("subcommands") or []
        if subcommands:
            words.append("|".join(str(s) for s in subcommands))
        text = " ".join(words)
    else:
        text = repr(rule)
    return f"command_rules[{index}]: {text}"[:MAX_RULE_LABEL]


_TEXT = NOT_WHITESPACE_PATTERN  # what .strip() leaves something of, no NUL
# What ``command_rule_problems`` accepts, as the JSON Schema the API publishes and role
# writes and imports are checked against first (a little stricter: ``module``,
# ``subcommands`` and ``options`` hold their own types, not just anything falsy).
COMMAND_RULE_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "pattern": _TEXT, "description": "A legacy glob rule, e.g. 'pytest *'."},
        {
            "type": "object",
            "required": ["program"],
            "additionalProperties": False,
            "properties": {
                "program": {
                    "type": "string",
                    "pattern": rf"^[^{WHITESPACE}/\u0000](?:[^/\u0000]*[^{WHITESPACE}/\u0000])?$",
                    "description": "argv[0], a bare program name.",
                },
                "module": {"type": "string", "pattern": r"^(?:[A-Za-z_][A-Za-z0-9_.]*)?$"},
                "subcommands": {
                    "type": "array",
                    "items": {"type": "string", "pattern": r"^(?!-)" + _TEXT[1:]},
                },
                "options": {
                    "type": "object",
                    "propertyNames": {"pattern": r"^--?[A-Za-z0-9][A-Za-z0-9_-]*$"},
                    "additionalProperties": {
                        "anyOf": [
                            {"type": "null"},
                            {"type": "string", "enum": sorted(VALUE_KINDS)},
                            {"type": "array", "items": {"type": "string"}},
                        ]
                    },
                },
                "args": {
                    "anyOf": [
                        {"type": "string", "enum": sorted(ARG_KINDS)},
                        {"type": "array", "items": {"type": "string"}},
                    ]
                },
            },
        },
    ]
}


def command_rule_problems(rule: object) -> list[str]:
    """Why a stored command rule is unusable (for role validation); empty when it is fine."""
    if isinstance(rule, str):
        return [] if rule.strip() else ["a command pattern must not be empty"]
    if not isinstance(rule, Mapping):
        return ["a command rule is a pattern string or an object with a program"]
    problems = []
    unknown = set(rule) - {"program", "module", "subcommands", "options", "args"}
    if unknown:
        problems.append(f"unknown keys {', '.join(sorted(unknown))}")
    program = rule.get("program")
    if not isinstance(program, str) or not program or "/" in program or program != program.strip():
        problems.append("program must be a bare program name (no path, no spaces)")
    module = rule.get("module", "")
    if module and not (isinstance(module, str) and re.fullmatch(r"[A-Za-z_][\w.]*", module)):
        problems.append("module must be a Python module name")
    subcommands = rule.get("subcommands") or []
    if not isinstance(subcommands, list) or not all(
        isinstance(s, str) and s.strip() and not s.startswith("-") for s in subcommands
    ):
        problems.append("subcommands must be a list of words (not options)")
    options = rule.get("options") or {}
    if not isinstance(options, Mapping):
        problems.append("options must map option names to a value kind")
    else:
        for name, kind in options.items():
            if not (isinstance(name, str) and re.fullmatch(r"--?[A-Za-z0-9][\w-]*", name)):
                problems.append(f"option {name!r} must look like -x or --long-name")
            elif not _kind_ok(kind, VALUE_KINDS):
                problems.append(
                    f"option {name}: value kind must be null, text, int, path or a list"
                )
    if not _kind_ok(rule.get("args", "none"), ARG_KINDS, allow_none=False):
        problems.append("args must be none, paths, text or a list of literal values")
    return problems


def _kind_ok(kind: object, names: frozenset[str], *, allow_none: bool = True) -> bool:
    if kind is None:
        return allow_none
    if isinstance(kind, str):
        return kind in names
    return isinstance(kind, list) and all(isinstance(v, str) for v in kind)


def _rule_program(rule: CommandRule) -> str:
    if isinstance(rule, str):
        words = rule.split()
        return words[0] if words else ""
    if isinstance(rule, Mapping):
        return str(rule.get("program", ""))
    return ""


# -- legacy glob patterns ---------------------------------------------------------------
def _legacy_problem(argv: Sequence[str], pattern: str) -> str | None:
    """None if the pattern allows argv, "" if it is about another program, else why not."""
    words = pattern.split()
    if not words:
        return ""
    literal: list[str] = []
    for word in words:
        if GLOB_CHARS & set(word):
            break
        literal.append(word)
    if literal and argv[0] != literal[0]:
        return ""
    if list(argv[: len(literal)]) != literal or not fnmatch.fnmatchcase(" ".join(argv), pattern):
        return f"{' '.join(argv)[:200]!r} does not match the pattern {pattern!r}"
    module = literal[2] if len(literal) >= 3 and literal[1] == "-m" else ""
    return _interpreter_problem(argv, module) or None


# -- structured rules -------------------------------------------------------------------
def _structured_problem(
    argv: Sequence[str], rule: Mapping[str, Any], workspace: Path
) -> str | None:
    if argv[0] != rule.get("program"):
        return ""
    position = 1
    module = str(rule.get("module") or "")
    if module:
        if list(argv[1:3]) != ["-m", module]:
            return f"{argv[0]} may run only as {argv[0]} -m {module}"
        position = 3
    else:
        problem = _interpreter_problem(argv, "")
        if problem:
            return problem
    subcommands = [str(s).split() for s in rule.get("subcommands") or []]
    if subcommands:
        chosen = next(
            (s for s in subcommands if list(argv[position : position + len(s)]) == s), None
        )
        if chosen is None:
            allowed = ", ".join(" ".join(s) for s in subcommands)
            return f"{argv[0]} may run only the subcommands {allowed}"
        position += len(chosen)
    options: Mapping[str, Any] = rule.get("options") or {}
    args_kind = rule.get("args", "none")
    rest = list(argv[position:])
    only_positional = False
    i = 0
    while i < len(rest):
        token = rest[i]
        i += 1
        if not only_positional and token == "--":
            only_positional = True
            continue
        if only_positional or not token.startswith("-") or token == "-":
            problem = _positional_problem(token, args_kind, workspace)
            if problem:
                return problem
            continue
        name, value, attached = _split_option(token, options)
        if name is None:
            return f"option {token!r} is not allowed for {argv[0]}"
        kind = options[name]
        if kind is None:
            if attached:
                return f"option {name} takes no value"
            continue
        if value is None:
            if i >= len(rest):
                return f"option {name} needs a value"
            value = rest[i]
            i += 1
        problem = _value_problem(name, value, kind, workspace)
        if problem:
            return problem
    return None


def _split_option(token: str, options: Mapping[str, Any]) -> tuple[str | None, str | None, bool]:
    """(option name, attached value or None, whether a value was attached) of a token."""
    if token in options:
        return token, None, False
    if token.startswith("--") and "=" in token:
        name, value = token.split("=", 1)
        return (name, value, True) if name in options else (None, None, False)
    if not token.startswith("--") and len(token) > 2:
        name = token[:2]  # -kEXPR: a short option with its value attached
        if name in options and options[name] is not None:
            return name, token[2:], True
    return None, None, False


def _value_problem(name: str, value: str, kind: Any, workspace: Path) -> str:
    if isinstance(kind, list):
        return "" if value in kind else f"option {name} accepts only {', '.join(kind)}"
    if kind == "int":
        return "" if re.fullmatch(r"\d{1,9}", value) else f"option {name} needs a whole number"
    if kind == "path":
        problem = path_problem(value, workspace)
        return f"option {name}: {problem}" if problem else ""
    if kind == "text":
        return "" if "\0" not in value else f"option {name}: NUL in the value"
    return f"option {name} has an unknown value kind {kind!r}"


def _positional_problem(token: str, kind: Any, workspace: Path) -> str:
    if isinstance(kind, list):
        return "" if token in kind else f"argument {token!r} is not one of {', '.join(kind)}"
    if kind == "paths":
        problem = path_problem(token.split("::", 1)[0], workspace)
        return f"argument {token!r}: {problem}" if problem else ""
    if kind == "text":
        return ""
    return f"argument {token!r}: this command takes no arguments"


def path_problem(value: str, workspace: Path) -> str:
    """Why ``value`` is not a relative path inside ``workspace`` (empty when it is).

    Lexical checks (absolute, ``~``, ``..``, ``.git``, NUL), then each existing component
    is looked at without following it: a symbolic link on the way is refused, as it could
    lead outside when commands run without the sandbox.
    """
    if not value or "\0" in value:
        return "a path is required"
    if value.startswith(("/", "~")):
        return f"{value!r} must be a path relative to the workspace"
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if ".." in parts:
        return f"{value!r} must not contain '..'"
    if any(p.lower() == ".git" for p in parts):
        return f"{value!r} is inside .git"
    current = Path(workspace)
    for part in parts:
        current = current / part
        try:
            info = os.lstat(current)
        except OSError:
            return ""  # not there (yet): nothing on the way can lead elsewhere
        if stat.S_ISLNK(info.st_mode):
            return f"{value!r} goes through a symbolic link"
    return ""


# -- interpreters -----------------------------------------------------------------------
def _interpreter_problem(argv: Sequence[str], module: str) -> str:
    """Why argv runs code given on the command line, or "" (only options before the script)."""
    program = os.path.basename(argv[0])
    spec = next((s for rx, s in _INTERPRETERS if rx.fullmatch(program)), None)
    if spec is None:
        return ""
    tokens = list(argv[1:])
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token == "--" or not token.startswith("-") or token == "-":
            return ""  # the script (or stdin): options end here
        if token.startswith("--"):
            if token.split("=", 1)[0] in spec.code_long:
                return f"{program} {token.split('=', 1)[0]} runs code given as text; refused"
            continue
        letters = token[1:]
        for j, letter in enumerate(letters):
            if letter in spec.code_letters:
                return f"{program} -{letter} runs code given as text; refused"
            if letter == spec.module_letter and spec.module_letter:
                name = letters[j + 1 :] or (tokens[i] if i < len(tokens) else "")
                if not module or name != module:
                    allowed = f"only -m {module}" if module else "no -m"
                    return f"{program} -m {name} runs a module the rule does not name ({allowed})"
                return ""
            if letter in spec.value_letters:
                if j == len(letters) - 1:
                    i += 1  # the value is the next token
                break
    return ""
