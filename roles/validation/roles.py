"""Checks on one role's definition: its fields, its form as JSON Schema, its references,
names and parent chain."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jsonschema import ValidationError

from acode.inputs import (
    JSON_VALUE_REF,
    NO_NUL,
    NOT_WHITESPACE,
    json_schema_errors,
    json_schema_problems,
)
from roles.access import RoleSpec
from roles.commands import COMMAND_RULE_SCHEMA, command_rule_problems
from roles.commands.examples import EXAMPLE_COMMON
from roles.models import CUSTOM_MAX_LLM_CALLS, CUSTOM_MAX_SECONDS, ContextStrategy, ReasoningEffort
from roles.tools import TOOL_GROUP_NAMES
from roles.validation.custom import CUSTOM_SCHEMA
from roles.validation.text import text_findings
from roles.writes import glob_problem

ROLE_FIELDS = tuple(RoleSpec.__dataclass_fields__)
ROLE_SCALARS: dict[str, type] = {
    "name": str,
    "description": str,
    "colour": str,
    "prompt_key": str,
    "context_strategy": str,
    "preferred_model": str,
    "fallback_model": str,
    "reasoning_effort": str,
    "queue": str,
    "max_llm_calls": int,
    "max_tokens": int,
    "timeout_seconds": int,
    "answer_sets_plan": bool,
    "protected": bool,
    "custom": bool,
    "max_sub_agents": int,
    "max_delegation_depth": int,
}
ROLE_LISTS = (
    "permissions",
    "allowed_tools",
    "allowed_tool_groups",
    "capabilities",
    "constraints",
    "write_paths",
    "reassign_models",
)
# Words the API routes under /api/roles/ claim; a role with such a slug could not be reached.
RESERVED_SLUGS = ("export", "import", "test")
_COLOUR = re.compile(r"^#[0-9a-fA-F]{6}$")


# A role's example: a call (a tool and its arguments) and the decision it must get, with
# what every example holds (``roles.commands.examples``).
ROLE_EXAMPLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["tool", "expect", "why"],
    "additionalProperties": False,
    "properties": {
        "tool": {"type": "string", "minLength": 1, "maxLength": 200},
        "arguments": {
            "type": "object",
            "propertyNames": {"pattern": NO_NUL},
            "additionalProperties": JSON_VALUE_REF,
        },
        **EXAMPLE_COMMON,
    },
}
ROLE_EXAMPLES_SCHEMA: dict[str, Any] = {"type": "array", "items": ROLE_EXAMPLE_SCHEMA}


def role_field_problems(data: Mapping[str, Any]) -> list[str]:
    """Problems with one role's own fields (not its references): admin, API and import."""
    problems: list[str] = []
    slug = str(data.get("slug", ""))
    if slug in RESERVED_SLUGS:
        problems.append(f"role {slug}: {slug!r} is a reserved slug")
    colour = data.get("colour")
    if colour is not None and not _COLOUR.match(str(colour)):
        problems.append(f"role {slug}: colour {colour!r} is not a hex colour like #2563eb")
    strategy = data.get("context_strategy")
    if strategy is not None and strategy not in ContextStrategy.values:
        problems.append(
            f"role {slug}: context_strategy {strategy!r} is not one of {', '.join(ContextStrategy.values)}"
        )
    globs = data.get("write_paths") or []
    if not isinstance(globs, list):
        problems.append(f"role {slug}: write_paths must be a list of globs")
        globs = []
    for glob in globs:
        problem = glob_problem(str(glob))
        if problem:
            problems.append(f"role {slug}: write_paths {problem}")
    rules = data.get("command_patterns") or []
    if not isinstance(rules, list):
        problems.append(f"role {slug}: command_patterns must be a list of rules")
        rules = []
    for index, rule in enumerate(rules):
        problems += [
            f"role {slug}: command_patterns[{index}]: {p}" for p in command_rule_problems(rule)
        ]
    problems += [
        f"role {slug}: examples: {p}"
        for p in json_schema_problems(ROLE_EXAMPLES_SCHEMA, data.get("examples") or [])
    ]
    groups = data.get("allowed_tool_groups") or []
    unknown = [g for g in groups if g not in TOOL_GROUP_NAMES] if isinstance(groups, list) else []
    if unknown:
        problems.append(
            f"role {slug}: allowed_tool_groups: unknown tool group "
            f"{', '.join(map(repr, unknown))} (known: {', '.join(TOOL_GROUP_NAMES)})"
        )
    for limit, most in (("max_sub_agents", 50), ("max_delegation_depth", 10)):
        value = data.get(limit)
        if value is not None and (not isinstance(value, int) or not 0 <= value <= most):
            problems.append(f"role {slug}: {limit} must be a whole number from 0 to {most}")
    for budget in ("max_llm_calls", "max_tokens", "timeout_seconds"):
        value = data.get(budget)
        if value is not None and (not isinstance(value, int) or value < 1):
            problems.append(f"role {slug}: {budget} must be a positive integer")
    return problems


# -- the same rules as JSON Schema ------------------------------------------------------
# What a role's fields may hold, as the API publishes it: role writes (API) and imports are
# checked against it first, so anything it allows passes ``role_field_problems`` too; what
# is left to refuse is a reference to something that does not exist (404) or a clash with
# what does (409). Bounds are the database's.
_INT = {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}
_TEXTS = {"type": "array", "items": {"type": "string", "maxLength": 500}}
_NAMES = {"type": "array", "items": {"type": "string", "maxLength": 64}}
# glob_problem's rules: not blank, relative (no leading / or ~), no ".." part.
_GLOB = rf"^(?![/~])(?![^\u0000]*(?:^|/)\.\.(?:/|$)){NOT_WHITESPACE[1:]}"
ROLE_PROPERTIES: dict[str, dict[str, Any]] = {
    "slug": {
        "type": "string",
        "pattern": r"^(?!(?:export|import|test)$)[-a-zA-Z0-9_]+$",
        "maxLength": 64,
        "description": "Letters, digits, - and _; not export, import or test (API routes).",
    },
    "name": {"type": "string", "minLength": 1, "maxLength": 100},
    "description": {"type": "string", "maxLength": 2000},
    "colour": {"type": "string", "pattern": _COLOUR.pattern},
    "permissions": {**_NAMES, "description": "Permission codes (unknown ones are 404)."},
    "allowed_tools": {**_NAMES, "description": "Tool names (unknown ones are 404)."},
    "allowed_tool_groups": {
        "type": "array",
        "uniqueItems": True,
        "items": {"type": "string", "enum": list(TOOL_GROUP_NAMES)},
        "description": "Tool groups the allow-list lets through whole (GET /api/tools/ says "
        "each tool's group).",
    },
    "capabilities": _TEXTS,
    "constraints": _TEXTS,
    "prompt_key": {"type": "string", "minLength": 1, "maxLength": 100},
    "context_strategy": {"type": "string", "enum": list(ContextStrategy.values)},
    "preferred_model": {"type": "string", "maxLength": 200},
    "fallback_model": {"type": "string", "maxLength": 200},
    "reassign_models": {
        "type": "array",
        "maxItems": 10,
        "uniqueItems": True,
        "items": {"type": "string", "minLength": 1, "maxLength": 200},
        "description": "Model endpoints, in order, a run moves a blocked plan step to.",
    },
    "reasoning_effort": {
        "type": "string",
        "enum": ["", *ReasoningEffort.values],
        "description": "low, medium or high, sent to the model; empty: not sent.",
    },
    "queue": {"type": "string", "maxLength": 100, "pattern": NOT_WHITESPACE},
    "max_llm_calls": _INT,
    "max_tokens": _INT,
    "timeout_seconds": _INT,
    "parent": {
        "type": ["string", "null"],
        "maxLength": 64,
        "description": "A role's slug (unknown: 404), or null.",
    },
    "write_paths": {
        "type": "array",
        "items": {"type": "string", "maxLength": 500, "pattern": _GLOB},
        "description": "Globs relative to the workspace, without '..'.",
    },
    "command_patterns": {"type": "array", "items": COMMAND_RULE_SCHEMA},
    "answer_sets_plan": {"type": "boolean"},
    "protected": {
        "type": "boolean",
        "description": "Changes to a protected role become drafts another admin publishes.",
    },
    "examples": {
        **ROLE_EXAMPLES_SCHEMA,
        "description": "Calls the role must allow or deny, checked on every save.",
    },
    "max_sub_agents": {
        "type": "integer",
        "minimum": 0,
        "maximum": 50,
        "description": "How many sub-agents one job in this role may start (default 4).",
    },
    "max_delegation_depth": {
        "type": "integer",
        "minimum": 0,
        "maximum": 10,
        "description": "How many levels of sub-agents may go below a job in this role (default 2).",
    },
    "custom": {
        "type": "boolean",
        "description": "A custom agent: never holds write, execute or network permissions "
        "(create_files, write_files, delete_files, execute_commands, network), nor allows a "
        f"job more than {CUSTOM_MAX_LLM_CALLS} model calls or {CUSTOM_MAX_SECONDS} seconds; "
        "once set, it stays set.",
    },
}


def role_schema(*, required: tuple[str, ...], with_slug: bool = True) -> dict[str, Any]:
    """A role as JSON Schema: every field, ``required`` ones required (no slug or custom flag
    for an update: neither changes)."""
    properties = {
        k: v for k, v in ROLE_PROPERTIES.items() if with_slug or k not in ("slug", "custom")
    }
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    schema["additionalProperties"] = False
    if required:
        schema["required"] = list(required)
    if with_slug:  # a role becomes custom only when it is made; an update cannot say
        schema.update(CUSTOM_SCHEMA)
    return schema


_NO_SLUG = "roles: every entry needs a slug"
_JSON_TYPES = {str: "string", int: "integer", bool: "boolean"}
_DESCRIBED = {"string": "text", "integer": "a whole number", "boolean": "true or false"}


def _role_content_schema() -> dict[str, Any]:
    """A role's content as the services hold it (every field, its stored type), as JSON
    Schema: what ``role_format_problems`` checks before the fields' own rules."""
    properties: dict[str, Any] = {
        name: {"type": _JSON_TYPES[kind], "description": _DESCRIBED[_JSON_TYPES[kind]]}
        for name, kind in ROLE_SCALARS.items()
    }
    for key in ROLE_LISTS:
        properties[key] = {
            "type": ["array", "null"],
            "items": {"type": "string"},
            "description": "a list of strings",
        }
    for key in ("name", "prompt_key"):
        properties[key] = {**properties[key], "minLength": 1}
    properties["slug"] = {"type": "string"}
    properties["parent"] = {"type": ["string", "null"], "description": "a role slug"}
    properties["command_patterns"] = {}  # role_field_problems checks each rule
    properties["examples"] = {}  # and the examples
    return {
        "type": "object",
        "required": ["name", "prompt_key"],
        "properties": properties,
        "additionalProperties": False,
    }


ROLE_CONTENT_SCHEMA = _role_content_schema()


def _content_problems(error: ValidationError) -> list[str]:
    if error.validator == "additionalProperties":
        unknown = sorted(set(error.instance) - set(ROLE_CONTENT_SCHEMA["properties"]))
        return [f"unknown fields {', '.join(unknown)}"]
    if error.validator == "required":
        return [
            f"{name} is required" for name in error.validator_value if name not in error.instance
        ]
    field = str(error.absolute_path[0])
    if error.validator == "minLength":
        return [f"{field} is required"]
    return [f"{field} must be {ROLE_CONTENT_SCHEMA['properties'][field]['description']}"]


def role_format_problems(item: Mapping[str, Any]) -> list[str]:
    """What is wrong with one role's data on its own, not counting what it refers to:
    its form (``ROLE_CONTENT_SCHEMA``), then its fields' rules (``role_field_problems``)."""
    slug = item.get("slug")
    if not slug or not isinstance(slug, str):
        return [_NO_SLUG]
    problems: list[str] = []
    for error in json_schema_errors(ROLE_CONTENT_SCHEMA, item):
        problems += [p for p in _content_problems(error) if p not in problems]
    return [f"role {slug}: {p}" for p in problems] + role_field_problems(item)


def role_spec(item: Mapping[str, Any]) -> RoleSpec:
    """A spec of ``item`` good enough to check names and parent chains, even if invalid."""
    parent = item.get("parent")
    fields: dict[str, Any] = {k: kind() for k, kind in ROLE_SCALARS.items()}
    fields.update({k: tuple(string_list(item.get(k))) for k in ROLE_LISTS})
    rules = item.get("command_patterns")
    fields["command_patterns"] = tuple(rules) if isinstance(rules, list) else ()
    examples = item.get("examples")
    fields["examples"] = (
        tuple(e for e in examples if isinstance(e, Mapping)) if isinstance(examples, list) else ()
    )
    name = item.get("name")
    fields.update(
        slug=str(item.get("slug", "")),
        name=name if isinstance(name, str) else "",
        parent=parent if isinstance(parent, str) else None,
    )
    return RoleSpec(**fields)


def role_text_findings(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Dangerous prompt patterns in role text that flows into prompts (constraints etc.)."""
    out: list[dict[str, Any]] = []
    for field_name in ("description", "capabilities", "constraints"):
        value = data.get(field_name) or ""
        for text in value if isinstance(value, list) else [value]:
            out += text_findings(f"role {data.get('slug')}.{field_name}", str(text))
    return out


def string_list(value: Any) -> list[str]:
    """``value`` when it is a list of strings, else no strings."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return []
