"""What a stored command rule may hold: its JSON Schema (published by the API, checked
first on role writes and imports) and the problems role validation names."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator

from acode.text import NOT_WHITESPACE_PATTERN, WHITESPACE
from roles.commands.examples import COMMAND_EXAMPLE_SCHEMA

VALUE_KINDS = frozenset({"text", "int", "path"})
ARG_KINDS = frozenset({"none", "paths", "text"})
# What a rule that matches says: run it, or run it once a person consents (absent: allow).
OUTCOMES = ("allow", "ask")

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
                "outcome": {
                    "type": "string",
                    "enum": list(OUTCOMES),
                    "description": "allow (the default) or ask: a person consents first.",
                },
                "examples": {"type": "array", "items": COMMAND_EXAMPLE_SCHEMA},
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
    known = {"program", "module", "subcommands", "options", "args", "outcome", "examples"}
    unknown = set(rule) - known
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
    if rule.get("outcome", "allow") not in OUTCOMES:
        problems.append("outcome must be allow or ask")
    return problems + _example_problems(rule.get("examples", []))


_EXAMPLES = Draft202012Validator({"type": "array", "items": COMMAND_EXAMPLE_SCHEMA})


def _example_problems(examples: object) -> list[str]:
    """What is wrong with a rule's examples (``roles.commands.examples``), the first five."""
    errors = sorted(_EXAMPLES.iter_errors(examples), key=lambda e: list(e.absolute_path))
    return [
        f"examples/{'/'.join(str(p) for p in e.absolute_path) or '(the list)'}: {e.message}"
        for e in errors[:5]
    ]


def _kind_ok(kind: object, names: frozenset[str], *, allow_none: bool = True) -> bool:
    if kind is None:
        return allow_none
    if isinstance(kind, str):
        return kind in names
    return isinstance(kind, list) and all(isinstance(v, str) for v in kind)
