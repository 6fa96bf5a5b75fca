"""Whether a role's command rules allow one command (see ``roles.commands`` for the rules)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from roles.commands.interpreters import interpreter_problem
from roles.commands.workspace import WorkspaceFacts, workspace_facts

GLOB_CHARS = frozenset("*?[")
MAX_RULE_LABEL = 200

CommandRule = str | Mapping[str, Any]


class CommandCheck(NamedTuple):
    """The decision on one command: allowed or not, the rule that decided, and why.

    ``ask``: the rule that allows it says a person must consent first (``"outcome":
    "ask"``)."""

    allowed: bool
    rule: str
    reason: str
    ask: bool = False


MAX_USAGES = 6


def command_rule_check(
    argv: Sequence[str], rules: Sequence[CommandRule], workspace: Path | WorkspaceFacts
) -> CommandCheck:
    """Whether ``rules`` allow ``argv`` in ``workspace``: the first rule that does decides.

    No rules: any command (contained by the sandbox). Otherwise the refusal names the
    closest rule (the one for the same program that matched the most of argv: its module,
    its subcommand, its options) and its problem, then what the rules for that program
    allow; or lists the allowed programs.
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
    closest: tuple[int, str, str] | None = None  # (how far it matched, label, problem)
    usages: list[str] = []
    for index, rule in enumerate(rules):
        if isinstance(rule, str):
            problem, depth = _legacy_problem(argv, rule)
        elif isinstance(rule, Mapping):
            problem, depth = _structured_problem(argv, rule, workspace)
        else:
            problem, depth = "not a command rule", 0
        if problem is None:
            label = rule_label(index, rule)
            return CommandCheck(True, label, f"allowed by {label}", rule_asks(rule))
        if problem:  # "" means: the rule is for another program (named only when it counts)
            usages.append(rule_usage(rule))
            if closest is None or depth > closest[0]:
                closest = (depth, rule_label(index, rule), problem)
    if closest is not None:
        _, label, problem = closest
        allowed = "; ".join(usages[:MAX_USAGES]) + ("; ..." if len(usages) > MAX_USAGES else "")
        return CommandCheck(False, label, f"{problem} ({label}); allowed: {allowed}")
    programs = sorted({_rule_program(rule) for rule in rules} - {""})
    return CommandCheck(
        False,
        "command_rules",
        f"no command rule allows {argv[0]!r}; allowed programs: {', '.join(programs) or 'none'}",
    )


def rule_usage(rule: CommandRule) -> str:
    """What a rule allows, in one line: ``python -m pytest [-q|-x|-k TEXT] [PATHS...]``."""
    if isinstance(rule, str):
        return rule[:MAX_RULE_LABEL]
    if not isinstance(rule, Mapping):
        return repr(rule)[:MAX_RULE_LABEL]
    words = [str(rule.get("program", "?"))]
    if rule.get("module"):
        words += ["-m", str(rule["module"])]
    subcommands = [str(s) for s in rule.get("subcommands") or []]
    if subcommands:
        words.append("|".join(subcommands))
    options = rule.get("options") or {}
    if isinstance(options, Mapping) and options:
        shown = [name if kind is None else f"{name} {_kind_word(kind)}"
                 for name, kind in options.items()]  # fmt: skip
        words.append(f"[{'|'.join(shown)}]")
    args = rule.get("args", "none")
    if args != "none":
        words.append(f"[{_kind_word(args)}...]")
    return " ".join(words)[:MAX_RULE_LABEL]


def _kind_word(kind: Any) -> str:
    if isinstance(kind, list):
        return "{" + ",".join(str(v) for v in kind) + "}"
    return str(kind).upper()


def rule_asks(rule: CommandRule) -> bool:
    """Whether a command the rule allows waits for a person's consent (``"outcome": "ask"``;
    any other outcome allows: the one reading, shared by the policy diff)."""
    return isinstance(rule, Mapping) and rule.get("outcome") == "ask"


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


def _rule_program(rule: CommandRule) -> str:
    if isinstance(rule, str):
        words = rule.split()
        return words[0] if words else ""
    if isinstance(rule, Mapping):
        return str(rule.get("program", ""))
    return ""


# -- legacy glob patterns ---------------------------------------------------------------
def _legacy_problem(argv: Sequence[str], pattern: str) -> tuple[str | None, int]:
    """None if the pattern allows argv, "" if it is about another program, else why not;
    with how many of argv's leading words the pattern's literal words matched."""
    words = pattern.split()
    if not words:
        return "", 0
    literal: list[str] = []
    for word in words:
        if GLOB_CHARS & set(word):
            break
        literal.append(word)
    if literal and argv[0] != literal[0]:
        return "", 0
    depth = next(
        (i for i, (a, w) in enumerate(zip(argv, literal, strict=False)) if a != w),
        min(len(argv), len(literal)),
    )
    if list(argv[: len(literal)]) != literal or not fnmatch.fnmatchcase(" ".join(argv), pattern):
        return f"{' '.join(argv)[:200]!r} does not match the pattern {pattern!r}", depth
    module = literal[2] if len(literal) >= 3 and literal[1] == "-m" else ""
    return interpreter_problem(argv, module) or None, depth


# -- structured rules -------------------------------------------------------------------
def _structured_problem(
    argv: Sequence[str], rule: Mapping[str, Any], workspace: Path | WorkspaceFacts
) -> tuple[str | None, int]:
    """None if the rule allows argv, "" if it is for another program, else why not; with
    how far into argv the rule matched (its program, module, subcommand, then each
    argument it accepted), which makes the closest rule's problem the one reported."""
    if argv[0] != rule.get("program"):
        return "", 0
    position = 1
    module = str(rule.get("module") or "")
    if module:
        if list(argv[1:3]) != ["-m", module]:
            return f"{argv[0]} may run only as {argv[0]} -m {module}", 1
        position = 3
    else:
        problem = interpreter_problem(argv, "")
        if problem:
            return problem, 1
    subcommands = [str(s).split() for s in rule.get("subcommands") or []]
    if subcommands:
        chosen = next(
            (s for s in subcommands if list(argv[position : position + len(s)]) == s), None
        )
        if chosen is None:
            allowed = ", ".join(" ".join(s) for s in subcommands)
            return f"{argv[0]} may run only the subcommands {allowed}", position
        position += len(chosen)
    rest_problem, used = _arguments_problem(argv[0], list(argv[position:]), rule, workspace)
    return rest_problem, position + used


def _arguments_problem(
    program: str, rest: list[str], rule: Mapping[str, Any], workspace: Path | WorkspaceFacts
) -> tuple[str | None, int]:
    """The options and positional arguments after the program (and module, subcommand):
    None when the rule allows them all, else the first problem and how many it accepted."""
    options: Mapping[str, Any] = rule.get("options") or {}
    args_kind = rule.get("args", "none")
    only_positional = False
    i = 0
    while i < len(rest):
        start = i
        token = rest[i]
        i += 1
        if not only_positional and token == "--":
            only_positional = True
            continue
        if only_positional or not token.startswith("-") or token == "-":
            problem = _positional_problem(token, args_kind, workspace)
            if problem:
                return problem, start
            continue
        name, value, attached = _split_option(token, options)
        if name is None and _bundled_flags(token, options):
            continue  # -qx, -vv: flags the rule allows, written together
        if name is None:
            return f"option {token!r} is not allowed for {program}", start
        kind = options[name]
        if kind is None:
            if attached:
                return f"option {name} takes no value", start
            continue
        if value is None:
            if i >= len(rest):
                return f"option {name} needs a value", start
            value = rest[i]
            i += 1
        problem = _value_problem(name, value, kind, workspace)
        if problem:
            return problem, start
    return None, len(rest)


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


def _bundled_flags(token: str, options: Mapping[str, Any]) -> bool:
    """Whether ``token`` is short flags written together (``-qx``), each one the rule
    allows as a flag (taking no value)."""
    letters = token[1:]
    return (
        not token.startswith("--")
        and len(letters) > 1
        and all(f"-{letter}" in options and options[f"-{letter}"] is None for letter in letters)
    )


def _value_problem(name: str, value: str, kind: Any, workspace: Path | WorkspaceFacts) -> str:
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


def _positional_problem(token: str, kind: Any, workspace: Path | WorkspaceFacts) -> str:
    if isinstance(kind, list):
        return "" if token in kind else f"argument {token!r} is not one of {', '.join(kind)}"
    if kind == "paths":
        problem = path_problem(token.split("::", 1)[0], workspace)
        return f"argument {token!r}: {problem}" if problem else ""
    if kind == "text":
        return ""
    return f"argument {token!r}: this command takes no arguments"


def path_problem(value: str, workspace: Path | WorkspaceFacts) -> str:
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
    if workspace_facts(workspace).link_on_path(parts) is not None:
        return f"{value!r} goes through a symbolic link"
    return ""
