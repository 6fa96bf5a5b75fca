"""The YAML document of role definitions: reading, writing and checking it.

A document (``FORMAT``) holds permissions, tools, roles, transition rules and prompt
packs. ``DOCUMENT_SCHEMA`` (JSON Schema) checks its form; ``document_check`` finds every
other problem in one pass, against the document and what the database already holds, so
an import can refuse a file before writing anything.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from acode.errors import AcodeError
from acode.yamldoc import YamlDocumentError, load_yaml_mapping
from acode.yamldoc import dump_yaml as dump_yaml  # its importers keep importing it from here
from roles.access import RoleSpec
from roles.models import DEFAULT_ROLE_SLUG, ModelEndpoint, Permission, Precondition, Tool
from roles.portability.mcp import MCP_PROPERTIES, mcp_problems
from roles.registry import read_specs
from roles.validation import (
    custom_lock_problems,
    parent_chain_problems,
    role_name_problems,
    role_reference_problems,
    role_schema,
    role_spec,
    role_text_findings,
    text_findings,
    tool_name_problems,
    transition_rule_problems,
)

FORMAT = "acode-roles/1"
SECTIONS = (
    "permissions", "tools", "roles", "transition_rules", "prompt_packs", "mcp_servers",
    "argument_limits",
)  # fmt: skip


def _entries(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    item = {
        "type": "object",
        "required": required,
        "properties": properties,
        "additionalProperties": False,
    }
    return {"type": "array", "items": item}


_SLUG = r"^[-a-zA-Z0-9_]+$"
_TEXT_255 = {"type": "string", "maxLength": 255}
# The form of a document: what an import checks first (ACODE-IMP-001), and what the API
# publishes for POST /api/roles/import/. What it allows and ``document_check`` still
# refuses is about how its definitions fit each other and the database (ACODE-IMP-003).
DOCUMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["format"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": FORMAT},
        "permissions": _entries(
            ["code"],
            {
                "code": {"type": "string", "pattern": _SLUG, "maxLength": 64},
                "description": _TEXT_255,
            },
        ),
        # A tool's schema and permissions are declared in code (roles.tools): a document
        # only enables, describes and orders the tools acode has.
        "tools": _entries(
            ["name"],
            {
                "name": {"type": "string", "pattern": _SLUG, "maxLength": 64},
                "description": _TEXT_255,
                "enabled": {"type": "boolean"},
                "position": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
            },
        ),
        "roles": {
            "type": "array",
            "items": role_schema(required=("slug", "name", "prompt_key")),
        },
        "transition_rules": _entries(
            ["from", "to"],
            {
                "from": {"type": "string", "maxLength": 64},
                "to": {"type": "string", "maxLength": 64},
                "precondition": {"type": "string", "enum": list(Precondition.values)},
                "explanation": _TEXT_255,
            },
        ),
        **MCP_PROPERTIES,  # mcp_servers, argument_limits (roles.portability.mcp)
        "prompt_packs": _entries(
            ["name"],
            {
                "name": {"type": "string", "pattern": _SLUG, "maxLength": 100},
                "version": {"type": "string", "maxLength": 40},
                "description": {"type": "string"},
                "components": _entries(
                    ["key", "content"],
                    {
                        "key": {"type": "string", "minLength": 1, "maxLength": 200},
                        "content": {"type": "string"},
                    },
                ),
            },
        ),
    },
}


# -- YAML (written by ``acode.yamldoc.dump_yaml``, also imported from here) -------------
def load_yaml(text: str) -> dict[str, Any]:
    """Parse a document with acode's one bounded YAML loader (``acode.yamldoc``):
    ACODE-IMP-001 if it is not YAML or not a mapping, ACODE-IMP-002 over a size, depth or
    alias limit, ACODE-INP-003 for NUL characters or unpaired surrogates."""
    try:
        return load_yaml_mapping(text)
    except YamlDocumentError as exc:
        raise AcodeError(exc.code, exc.message, {"problems": exc.problems}) from None


# -- checking -------------------------------------------------------------------------
@dataclass
class DocumentCheck:
    """Every problem found in a document, and every piece of dangerous prompt text."""

    problems: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)

    def unique(self, section: str, names: list[str]) -> None:
        seen: set[str] = set()
        for name in names:
            if name in seen:
                self.problems.append(f"{section}: {name!r} appears twice")
            seen.add(name)


def document_check(data: Mapping[str, Any]) -> DocumentCheck:
    """Check a document of the schema's form (``DOCUMENT_SCHEMA`` checks that first, and
    says what is wrong with the form) against itself and the database: names used twice,
    references to what exists nowhere, parent chains, dangerous prompt text. Nothing is
    written."""
    check = DocumentCheck()
    perms = _check_permissions(check, data.get("permissions", []))
    tools = _check_tools(check, data.get("tools", []))
    roles = _check_roles(check, data.get("roles", []), perms, tools)
    _check_rules(check, data.get("transition_rules", []), roles)
    _check_prompt_packs(check, data.get("prompt_packs", []))
    check.problems += mcp_problems(data, roles)
    return check


def _check_permissions(check: DocumentCheck, perms: list[dict[str, Any]]) -> set[str]:
    """Known permission codes afterwards: the document's and the database's."""
    codes = [p["code"] for p in perms]
    check.unique("permissions", codes)
    return set(codes) | set(Permission.objects.values_list("code", flat=True))


def _check_tools(check: DocumentCheck, tools: list[dict[str, Any]]) -> set[str]:
    """Known tool names afterwards: the document's and the database's."""
    names = [t["name"] for t in tools]
    check.unique("tools", names)
    for name in names:
        check.problems += tool_name_problems(name)
    return set(names) | set(Tool.objects.values_list("name", flat=True))


def _check_roles(
    check: DocumentCheck,
    roles: list[dict[str, Any]],
    known_permissions: Collection[str],
    known_tools: Collection[str],
) -> set[str]:
    """Known role slugs afterwards: the document's and the database's."""
    check.unique("roles", [r["slug"] for r in roles])
    specs: dict[str, RoleSpec] = {spec.slug: spec for _, spec in read_specs()[0]}
    endpoints = set(ModelEndpoint.objects.values_list("name", flat=True))
    for r in roles:
        check.problems += role_reference_problems(
            r,
            known_permissions=known_permissions,
            known_tools=known_tools,
            known_endpoints=endpoints,
        )
        check.findings += role_text_findings(r)
        stored = specs.get(r["slug"])
        check.problems += custom_lock_problems(r, was_custom=bool(stored and stored.custom))
        specs[r["slug"]] = role_spec(r)
    check.problems += role_name_problems(specs) + parent_chain_problems(specs)
    if DEFAULT_ROLE_SLUG not in specs:
        check.problems.append(f"roles: a role with slug {DEFAULT_ROLE_SLUG!r} is required")
    return set(specs)


def _check_rules(
    check: DocumentCheck, rules: list[dict[str, Any]], known_roles: Collection[str]
) -> None:
    for rule in rules:
        check.problems += transition_rule_problems(
            from_slug=rule["from"],
            to_slug=rule["to"],
            precondition=rule.get("precondition", "none"),
            known_roles=known_roles,
        )
    check.unique("transition_rules", [f"{r['from']}->{r['to']}" for r in rules])


def _check_prompt_packs(check: DocumentCheck, packs: list[dict[str, Any]]) -> None:
    check.unique("prompt_packs", [p["name"] for p in packs])
    for pack in packs:
        components = pack.get("components", [])
        check.unique(f"prompt pack {pack['name']}", [c["key"] for c in components])
        for c in components:
            check.findings += text_findings(f"prompt {pack['name']}:{c['key']}", c["content"])
