"""Export and import of role definitions, and the shipped defaults.

``export_definitions`` and ``import_definitions`` round-trip exactly: exporting, importing
into an empty database and exporting again gives the same text and the same role hashes.
Import checks the whole document before it writes anything, then writes it in one
transaction through ``roles.services`` and records role versions once.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from acode.errors import AcodeError
from acode.inputs import json_schema_check
from roles.access import DELEGATION_DEFAULTS
from roles.models import (
    DEFAULT_ROLE_SLUG,
    Permission,
    Precondition,
    PromptComponent,
    PromptPack,
    Role,
    Tool,
    TransitionRule,
)
from roles.portability.document import DOCUMENT_SCHEMA, FORMAT, document_check, load_yaml
from roles.portability.mcp import export_mcp, mcp_write
from roles.registry import read_specs
from roles.services import (
    catalog_examples_check,
    permission_delete,
    permission_save,
    prompt_component_delete,
    prompt_component_save,
    prompt_pack_delete,
    prompt_pack_save,
    prompt_rejection_record,
    role_delete,
    role_draft_route,
    role_examples_enforce,
    role_parents_set,
    role_upsert,
    role_versions_record,
    tool_delete,
    tool_save,
    transition_rule_delete,
    transition_rule_save,
)
from roles.services.protection import reviewed_write
from roles.tools import declared_tools
from roles.validation import ROLE_SCALARS, describe_findings

logger = logging.getLogger(__name__)

SEED_FILE = Path(__file__).resolve().parent.parent / "seed" / "acode-standard.yaml"


# -- export ---------------------------------------------------------------------------
def export_definitions() -> dict[str, Any]:
    """Everything that defines roles, as plain data in a stable order."""
    id_specs, _ = read_specs()
    return {
        "format": FORMAT,
        "permissions": [
            {"code": p.code, "description": p.description}
            for p in Permission.objects.order_by("code")
        ],
        "tools": [
            {
                "name": t.name,
                "description": t.description,
                "enabled": t.enabled,
                "position": t.position,
            }
            for t in Tool.objects.filter(name__in=declared_tools()).order_by("name")
        ],
        "roles": [spec.content() for _, spec in id_specs],
        "transition_rules": [
            {"from": f, "to": t, "precondition": p, "explanation": e}
            for f, t, p, e in TransitionRule.objects.order_by(
                "from_role_id", "to_role_id"
            ).values_list("from_role__slug", "to_role__slug", "precondition", "explanation")
        ],
        "prompt_packs": [
            {
                "name": pack.name,
                "version": pack.version,
                "description": pack.description,
                "components": [
                    {"key": c.key, "content": c.content} for c in pack.components.order_by("key")
                ],
            }
            for pack in PromptPack.objects.order_by("name").prefetch_related("components")
        ],
        **export_mcp(),
    }


# -- import ---------------------------------------------------------------------------
@dataclass
class ImportSummary:
    """What an import wrote."""

    permissions: int = 0
    tools: int = 0
    roles: int = 0
    rules: int = 0
    prompt_components: int = 0
    mcp_servers: int = 0
    argument_limits: int = 0
    versions: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    drafts: list[str] = field(default_factory=list)  # protected roles' changes, for review


def import_definitions(
    data: Mapping[str, Any],
    *,
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    replace: bool = False,
) -> ImportSummary:
    """Check then write a whole document; nothing is written if anything is wrong.

    With ``replace``, roles (but Default), tools, permissions, rules and prompt
    components absent from the document are removed, so the database matches it; a role
    that sessions still use is not removed (ACODE-ROL-005) and nothing is written.
    """
    # The form first (the schema the API publishes), so the checks below only ever see
    # a well-formed document.
    refusal = f"Import refused, the file is not a {FORMAT} document"
    json_schema_check(DOCUMENT_SCHEMA, data, code="ACODE-IMP-001", refusal=refusal)
    check = document_check(data)
    if check.findings:
        who = actor or (user.get_username() if user is not None else "import")
        prompt_rejection_record(where="import", actor=who, findings=check.findings)
        raise AcodeError(
            "ACODE-PRM-001",
            f"Import refused, dangerous prompt content: {describe_findings(check.findings)}",
            {"findings": check.findings, "problems": check.problems},
        )
    if check.problems:
        raise AcodeError(
            "ACODE-IMP-003",
            f"Import refused, {len(check.problems)} problem(s): " + "; ".join(check.problems[:5]),
            {"problems": check.problems},
        )
    summary = ImportSummary()
    with transaction.atomic():
        _Writer(summary, actor=actor, user=user).write(data, replace=replace)
        servers, limits, removed = mcp_write(data, replace=replace, actor=actor, user=user)
        summary.mcp_servers, summary.argument_limits = servers, limits
        summary.removed += removed
        # Every role the document defines, and those below them, as written: one failing
        # example (ACODE-ROL-008) rolls the whole import back.
        role_examples_enforce(saved={r["slug"] for r in data.get("roles", [])})
        if data.get("tools") or data.get("permissions"):  # what every role is made of
            catalog_examples_check()
        summary.versions = [str(v) for v in role_versions_record(actor=actor, user=user)]
    return summary


class _Writer:
    """Writes a checked document, section by section, through the services."""

    def __init__(
        self, summary: ImportSummary, *, actor: str | None, user: AbstractBaseUser | None
    ) -> None:
        self.summary = summary
        self.actor = actor
        self.user = user

    def write(self, data: Mapping[str, Any], *, replace: bool) -> None:
        self.permissions(data.get("permissions", []))
        self.tools(data.get("tools", []))
        self.roles(data.get("roles", []))
        self.rules(data.get("transition_rules", []))
        kept_components = self.prompt_packs(data.get("prompt_packs", []))
        if replace:
            self.remove_absent(data, kept_components)

    def permissions(self, items: list[dict[str, Any]]) -> None:
        perms = {p.code: p for p in Permission.objects.all()}
        for item in items:
            perm = perms.get(item["code"]) or Permission(code=item["code"])
            perm.description = item.get("description", "")
            perms[perm.code] = permission_save(permission=perm, versioned=False)
            self.summary.permissions += 1

    def tools(self, items: list[dict[str, Any]]) -> None:
        tools = {t.name: t for t in Tool.objects.all()}
        for item in items:
            tool = tools.get(item["name"]) or Tool(name=item["name"])
            tool.description = item.get("description", "")
            tool.enabled = item.get("enabled", True)
            tool.position = item.get("position", 0)
            tool_save(tool=tool, versioned=False)
            self.summary.tools += 1

    def roles(self, items: list[dict[str, Any]]) -> None:
        # Roles first, in file order (so ids, and the next export, keep that order),
        # then parents, which may be defined further down the file.
        # A protected role's entry becomes a draft (when it changes anything) and is not
        # written: the same decision as every role write (``role_draft_route``).
        live = []
        for item in items:
            content = _import_content(item)
            draft = role_draft_route(content=content, actor=self.actor, user=self.user)
            if draft is not None:
                self.summary.drafts.append(str(draft))
                continue
            role_upsert(content=item)
            live.append(item)
            self.summary.roles += 1
        role_parents_set(parents={item["slug"]: item.get("parent") for item in live})

    def rules(self, items: list[dict[str, Any]]) -> None:
        roles = {r.slug: r for r in Role.objects.all()}
        existing = {
            (r.from_role.slug, r.to_role.slug): r
            for r in TransitionRule.objects.select_related("from_role", "to_role")
        }
        for item in items:
            rule = existing.get((item["from"], item["to"])) or TransitionRule(
                from_role=roles[item["from"]], to_role=roles[item["to"]]
            )
            rule.precondition = item.get("precondition", Precondition.NONE)
            rule.explanation = item.get("explanation", "")
            transition_rule_save(rule=rule, actor=self.actor, user=self.user)
            self.summary.rules += 1

    def prompt_packs(self, items: list[dict[str, Any]]) -> set[tuple[str, str]]:
        """Write packs and their texts; the (pack, key) pairs the document holds."""
        packs = {p.name: p for p in PromptPack.objects.all()}
        components = {
            (c.pack.name, c.key): c for c in PromptComponent.objects.select_related("pack")
        }
        kept: set[tuple[str, str]] = set()
        for item in items:
            pack = packs.get(item["name"]) or PromptPack(name=item["name"])
            pack.version = item.get("version", "1.0.0")
            pack.description = item.get("description", "")
            prompt_pack_save(pack=pack, actor=self.actor)
            for c in item.get("components", []):
                component = components.get((pack.name, c["key"])) or PromptComponent(
                    pack=pack, key=c["key"]
                )
                component.content = c["content"]
                prompt_component_save(component=component, actor=self.actor)
                kept.add((pack.name, c["key"]))
                self.summary.prompt_components += 1
        return kept

    def remove_absent(self, data: Mapping[str, Any], kept_components: set[tuple[str, str]]) -> None:
        removed, actor, user = self.summary.removed, self.actor, self.user
        rule_pairs = {(r["from"], r["to"]) for r in data.get("transition_rules", [])}
        for rule in TransitionRule.objects.select_related("from_role", "to_role"):
            if (rule.from_role.slug, rule.to_role.slug) not in rule_pairs:
                removed.append(f"rule {rule}")
                transition_rule_delete(rule=rule, actor=actor, user=user)
        keep = {r["slug"] for r in data.get("roles", [])} | {DEFAULT_ROLE_SLUG}
        doomed = list(Role.objects.exclude(slug__in=keep))
        role_parents_set(parents={r.slug: None for r in doomed})  # so PROTECT does not trip
        for role in doomed:
            removed.append(f"role {role.slug}")
            role_delete(role=role, actor=actor, user=user)
        for tool in Tool.objects.exclude(name__in={t["name"] for t in data.get("tools", [])}):
            removed.append(f"tool {tool.name}")
            tool_delete(tool=tool, versioned=False, actor=actor, user=user)
        codes = {p["code"] for p in data.get("permissions", [])}
        for perm in Permission.objects.exclude(code__in=codes):
            removed.append(f"permission {perm.code}")
            permission_delete(permission=perm, versioned=False, actor=actor, user=user)
        for component in PromptComponent.objects.select_related("pack"):
            if (component.pack.name, component.key) not in kept_components:
                removed.append(f"prompt {component}")
                prompt_component_delete(component=component, actor=actor)
        pack_names = {p["name"] for p in data.get("prompt_packs", [])}
        for pack in PromptPack.objects.exclude(name__in=pack_names):
            removed.append(f"prompt pack {pack.name}")
            prompt_pack_delete(pack=pack, actor=actor)


def _import_content(item: Mapping[str, Any]) -> dict[str, Any]:
    """What importing ``item`` over a stored role would leave: the scalars it omits kept
    (``role_upsert`` writes only those it has), everything else as the entry says."""
    stored = Role.objects.filter(slug=item["slug"]).values(*ROLE_SCALARS).first() or {}
    protected = bool(item.get("protected", False))  # as role_upsert reads it
    content = {**stored, **item, "parent": item.get("parent"), "protected": protected}
    if not content.get("custom"):  # a role's content names "custom" only when set
        content.pop("custom", None)
    for name, default in DELEGATION_DEFAULTS.items():  # as role_upsert reads them
        if item.get(name, default) == default:
            content.pop(name, None)
    return content


# -- the shipped defaults -------------------------------------------------------------
def seed_defaults(*, using: str = "default") -> bool:
    """Load the shipped role set when the database has no roles; True if it did.

    When roles exist, record versions for any whose content a migration changed.
    """
    if using != "default":
        return False
    # The shipped set, like what a deployed release changed, was reviewed as code: no
    # protected role exists before it to widen.
    with reviewed_write():
        if Role.objects.exists():
            role_versions_record(actor="migration")
            return False
        import_definitions(copy.deepcopy(_shipped_set()), actor="system")
    logger.info("seeded default roles from %s", SEED_FILE.name)
    return True


@functools.cache
def _shipped_set() -> dict[str, Any]:
    """The shipped document, parsed once a process: the seed runs again after every flush
    of a test database (pytest), and parsing it took a third of a second."""
    return load_yaml(SEED_FILE.read_text(encoding="utf-8"))
