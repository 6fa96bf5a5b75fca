"""The form of a policy example: a call and the decision it must get.

Examples are stored with a role (``Role.examples``) and with a structured command rule
(its ``examples`` key), and checked with the tool decision on every save
(``roles.decision.examples``). What they share, and a command rule's example, live here
beside the command rule's schema that includes it.

A role example names a tool, its arguments, the context the decision needs, ``allow`` or
``deny`` (or ``ask``: allowed once a person consents) and why; ``rule``, when given, is what the deciding rule's name must start with.
A command rule's example names an ``argv`` (run by ``execute_command`` unless ``tool``
says ``run_tests``). The context states what the host and workspace would be: the sandbox
(``available``, ``unavailable`` or ``off``; default available), whether the copy-on-write
layer can be mounted (``layer``, default true) and which workspace paths are symbolic
links (``links``).
"""

from __future__ import annotations

from typing import Any

from acode.text import NOT_WHITESPACE_PATTERN

EXPECTATIONS = ("allow", "ask", "deny")
SANDBOX_STATES = ("available", "unavailable", "off")

EXAMPLE_CONTEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "sandbox": {"type": "string", "enum": list(SANDBOX_STATES)},
        "layer": {"type": "boolean"},
        "links": {"type": "array", "items": {"type": "string", "maxLength": 500}},
    },
}
# What every example holds besides its call (a role example's own form, with its tool and
# arguments, is ``roles.validation.roles.ROLE_EXAMPLE_SCHEMA``).
EXAMPLE_COMMON: dict[str, Any] = {
    "name": {"type": "string", "maxLength": 200},
    "context": EXAMPLE_CONTEXT_SCHEMA,
    "expect": {"type": "string", "enum": list(EXPECTATIONS)},
    "why": {"type": "string", "minLength": 1, "maxLength": 1000, "pattern": NOT_WHITESPACE_PATTERN},
    "rule": {"type": "string", "minLength": 1, "maxLength": 200},
}
COMMAND_EXAMPLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["argv", "expect", "why"],
    "additionalProperties": False,
    "properties": {
        "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "tool": {"type": "string", "enum": ["execute_command", "run_tests"]},
        **EXAMPLE_COMMON,
    },
}
