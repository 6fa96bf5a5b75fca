"""Roles, tools, transition rules and prompt packs as YAML, so teams keep them in git.

``export_definitions`` and ``import_definitions`` round-trip exactly: exporting, importing
into an empty database and exporting again gives the same text and the same role hashes.
Import validates the whole document before it writes anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from acode.errors import AcodeError
from roles.access import RoleSpec, parent_chain
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
from roles.prompts import find_dangerous
from roles.registry import read_specs
from roles.services import (
    role_field_problems,
    role_text_findings,
    role_versions_record,
)
from roles.signals import prompt_rejected

FORMAT = "acode-roles/1"
ROLE_FIELDS = list(RoleSpec.__dataclass_fields__)
_ROLE_SCALARS = {
    "name": str,
    "description": str,
    "colour": str,
    "prompt_key": str,
    "context_strategy": str,
    "preferred_model": str,
    "fallback_model": str,
    "queue": str,
    "max_llm_calls": int,
    "max_tokens": int,
    "timeout_seconds": int,
    "answer_sets_plan": bool,
}
_ROLE_LISTS = (
    "permissions",
    "allowed_tools",
    "capabilities",
    "constraints",
    "write_paths",
    "command_patterns",
)


# -- YAML ------------------------------------------------------------------------------
class _Dumper(yaml.SafeDumper):
    pass


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_yaml(data: Mapping[str, Any]) -> str:
    return yaml.dump(dict(data), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def load_yaml(text: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AcodeError(
            "ACODE-IMP-001", f"Not valid YAML: {exc}", {"problems": [str(exc)]}
        ) from exc
    if not isinstance(data, dict):
        raise AcodeError(
            "ACODE-IMP-001",
            "The file must hold a mapping.",
            {"problems": ["top level is not a mapping"]},
        )
    return data


# -- export ----------------------------------------------------------------------------
def export_definitions() -> dict[str, Any]:
    """Everything that defines roles, as plain data in a stable order."""
    id_specs, tools = read_specs()
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
                "required_permissions": list(t.required_permissions),
                "argument_schema": dict(t.argument_schema),
                "enabled": t.enabled,
            }
            for t in sorted(tools, key=lambda t: t.name)
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
    }


# -- validation ------------------------------------------------------------------------
@dataclass
class _Check:
    problems: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)

    def list_of_dicts(self, data: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            self.problems.append(f"{key}: must be a list of mappings")
            return []
        return value

    def strings(self, where: str, value: Any) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problems.append(f"{where}: must be a list of strings")
            return []
        return value

    def unique(self, section: str, names: list[str]) -> None:
        seen: set[str] = set()
        for name in names:
            if name in seen:
                self.problems.append(f"{section}: {name!r} appears twice")
            seen.add(name)


def _validate(data: Mapping[str, Any]) -> _Check:
    check = _Check()
    if data.get("format") != FORMAT:
        check.problems.append(f"format: must be {FORMAT!r}, got {data.get('format')!r}")
    unknown = set(data) - {
        "format",
        "permissions",
        "tools",
        "roles",
        "transition_rules",
        "prompt_packs",
    }
    if unknown:
        check.problems.append(f"unknown sections: {', '.join(sorted(unknown))}")

    perms = check.list_of_dicts(data, "permissions")
    tools = check.list_of_dicts(data, "tools")
    roles = check.list_of_dicts(data, "roles")
    rules = check.list_of_dicts(data, "transition_rules")
    packs = check.list_of_dicts(data, "prompt_packs")

    perm_codes = {str(p.get("code", "")) for p in perms}
    check.unique("permissions", [str(p.get("code", "")) for p in perms])
    for p in perms:
        if not p.get("code") or not isinstance(p.get("code"), str):
            check.problems.append("permissions: every entry needs a code")
    known_perms = perm_codes | set(Permission.objects.values_list("code", flat=True))

    check.unique("tools", [str(t.get("name", "")) for t in tools])
    tool_names = {str(t.get("name", "")) for t in tools}
    for t in tools:
        name = t.get("name")
        if not name or not isinstance(name, str):
            check.problems.append("tools: every entry needs a name")
            continue
        for code in check.strings(
            f"tool {name}.required_permissions", t.get("required_permissions")
        ):
            if code not in known_perms:
                check.problems.append(f"tool {name}: unknown permission {code!r}")
        if not isinstance(t.get("argument_schema", {}), dict):
            check.problems.append(f"tool {name}: argument_schema must be a mapping")
        if not isinstance(t.get("enabled", True), bool):
            check.problems.append(f"tool {name}: enabled must be true or false")
    known_tools = tool_names | set(Tool.objects.values_list("name", flat=True))

    check.unique("roles", [str(r.get("slug", "")) for r in roles])
    check.unique("role names", [str(r.get("name", "")).lower() for r in roles])
    existing = {spec.slug: spec for _, spec in read_specs()[0]}
    file_specs: dict[str, RoleSpec] = dict(existing)
    for r in roles:
        slug = r.get("slug")
        if not slug or not isinstance(slug, str):
            check.problems.append("roles: every entry needs a slug")
            continue
        unknown_fields = set(r) - set(ROLE_FIELDS)
        if unknown_fields:
            check.problems.append(
                f"role {slug}: unknown fields {', '.join(sorted(unknown_fields))}"
            )
        for name, kind in _ROLE_SCALARS.items():
            if name in r and not isinstance(r[name], kind):
                check.problems.append(f"role {slug}: {name} must be a {kind.__name__}")
        if not r.get("name"):
            check.problems.append(f"role {slug}: name is required")
        if not r.get("prompt_key"):
            check.problems.append(f"role {slug}: prompt_key is required")
        lists = {k: check.strings(f"role {slug}.{k}", r.get(k)) for k in _ROLE_LISTS}
        for code in lists["permissions"]:
            if code not in known_perms:
                check.problems.append(f"role {slug}: unknown permission {code!r}")
        for name in lists["allowed_tools"]:
            if name not in known_tools:
                check.problems.append(f"role {slug}: unknown tool {name!r} in allowed_tools")
        check.problems += role_field_problems(r)
        check.findings += role_text_findings(r)
        parent = r.get("parent")
        if parent is not None and not isinstance(parent, str):
            check.problems.append(f"role {slug}: parent must be a role slug")
            parent = None
        file_specs[slug] = RoleSpec(
            **{
                **{k: "" for k in _ROLE_SCALARS if _ROLE_SCALARS[k] is str},
                **{k: 1 for k in _ROLE_SCALARS if _ROLE_SCALARS[k] is int},
                "answer_sets_plan": bool(r.get("answer_sets_plan", False)),
                **{k: tuple(v) for k, v in lists.items()},
                "slug": slug,
                "parent": parent,
            }
        )
    for slug, spec in file_specs.items():
        if spec.parent is not None and spec.parent not in file_specs:
            check.problems.append(f"role {slug}: unknown parent {spec.parent!r}")
            continue
        try:
            parent_chain(slug, file_specs)
        except (ValueError, KeyError) as exc:
            check.problems.append(f"role {slug}: {exc}")
    if DEFAULT_ROLE_SLUG not in file_specs:
        check.problems.append(f"roles: a role with slug {DEFAULT_ROLE_SLUG!r} is required")

    pairs: list[str] = []
    for rule in rules:
        src, dst = rule.get("from"), rule.get("to")
        pairs.append(f"{src}->{dst}")
        for end in (src, dst):
            if end not in file_specs:
                check.problems.append(f"transition rule {src}->{dst}: unknown role {end!r}")
        if rule.get("precondition", "none") not in Precondition.values:
            check.problems.append(
                f"transition rule {src}->{dst}: precondition must be one of {', '.join(Precondition.values)}"
            )
        if src == dst:
            check.problems.append(f"transition rule {src}->{dst}: a rule must change the role")
    check.unique("transition_rules", pairs)

    check.unique("prompt_packs", [str(p.get("name", "")) for p in packs])
    for pack in packs:
        name = pack.get("name")
        if not name or not isinstance(name, str):
            check.problems.append("prompt_packs: every entry needs a name")
            continue
        components = check.list_of_dicts(pack, "components")
        check.unique(f"prompt pack {name}", [str(c.get("key", "")) for c in components])
        for c in components:
            key, content = c.get("key"), c.get("content")
            if not isinstance(key, str) or not key or not isinstance(content, str):
                check.problems.append(f"prompt pack {name}: components need a key and text content")
                continue
            for f in find_dangerous(content):
                check.findings.append(
                    {
                        "where": f"prompt {name}:{key}",
                        "rule": f.rule,
                        "match": f.match,
                        "line": f.line,
                    }
                )
    return check


# -- import ----------------------------------------------------------------------------
@dataclass
class ImportSummary:
    """What an import wrote."""

    permissions: int = 0
    tools: int = 0
    roles: int = 0
    rules: int = 0
    prompt_components: int = 0
    versions: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def import_definitions(
    data: Mapping[str, Any],
    *,
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    replace: bool = False,
) -> ImportSummary:
    """Validate then write a whole document; nothing is written if anything is wrong.

    With ``replace``, roles (but Default), tools, permissions, rules and prompt
    components absent from the document are removed, so the database matches it.
    """
    check = _validate(data)
    if check.findings:
        prompt_rejected.send(
            sender=PromptPack, where="import", actor=actor or "import", findings=check.findings
        )
        described = "; ".join(f"{f['where']}: {f['rule']}: {f['match']!r}" for f in check.findings)
        raise AcodeError(
            "ACODE-PRM-001",
            f"Import refused, dangerous prompt content: {described}",
            {"findings": check.findings, "problems": check.problems},
        )
    if check.problems:
        raise AcodeError(
            "ACODE-IMP-001",
            f"Import refused, {len(check.problems)} problem(s): " + "; ".join(check.problems[:5]),
            {"problems": check.problems},
        )
    summary = ImportSummary()
    with transaction.atomic():
        _write(data, summary, replace=replace)
        summary.versions = [str(v) for v in role_versions_record(actor=actor, user=user)]
    return summary


def _write(data: Mapping[str, Any], summary: ImportSummary, *, replace: bool) -> None:
    perms = {p.code: p for p in Permission.objects.all()}
    for item in data.get("permissions", []):
        perm, _ = Permission.objects.update_or_create(
            code=item["code"], defaults={"description": item.get("description", "")}
        )
        perms[perm.code] = perm
        summary.permissions += 1

    tools = {t.name: t for t in Tool.objects.all()}
    for item in data.get("tools", []):
        tool, _ = Tool.objects.update_or_create(
            name=item["name"],
            defaults={
                "description": item.get("description", ""),
                "argument_schema": item.get("argument_schema", {}),
                "enabled": item.get("enabled", True),
            },
        )
        tool.required_permissions.set([perms[c] for c in item.get("required_permissions", [])])
        tools[tool.name] = tool
        summary.tools += 1

    roles = {r.slug: r for r in Role.objects.all()}
    for item in data.get("roles", []):
        defaults: dict[str, Any] = {k: item[k] for k in _ROLE_SCALARS if k in item}
        for k in ("capabilities", "constraints", "write_paths", "command_patterns"):
            defaults[k] = list(item.get(k) or [])
        role = roles.get(item["slug"])
        if role is None:
            role = Role(slug=item["slug"])
        for k, v in defaults.items():
            setattr(role, k, v)
        role.save()
        roles[role.slug] = role
        summary.roles += 1
    for item in data.get("roles", []):
        role = roles[item["slug"]]
        parent = roles[item["parent"]] if item.get("parent") else None
        if role.parent_id != (parent.pk if parent else None):
            role.parent = parent
            role.save(update_fields=["parent"])
        role.permissions.set([perms[c] for c in item.get("permissions") or []])
        role.allowed_tools.set([tools[n] for n in item.get("allowed_tools") or []])

    for item in data.get("transition_rules", []):
        TransitionRule.objects.update_or_create(
            from_role=roles[item["from"]],
            to_role=roles[item["to"]],
            defaults={
                "precondition": item.get("precondition", Precondition.NONE),
                "explanation": item.get("explanation", ""),
            },
        )
        summary.rules += 1

    kept_components: set[tuple[str, str]] = set()
    for item in data.get("prompt_packs", []):
        pack, _ = PromptPack.objects.update_or_create(
            name=item["name"],
            defaults={
                "version": item.get("version", "1.0.0"),
                "description": item.get("description", ""),
            },
        )
        for c in item.get("components", []):
            PromptComponent.objects.update_or_create(
                pack=pack, key=c["key"], defaults={"content": c["content"]}
            )
            kept_components.add((pack.name, c["key"]))
            summary.prompt_components += 1

    if replace:
        _remove_absent(data, roles, kept_components, summary)


def _remove_absent(
    data: Mapping[str, Any],
    roles: dict[str, Role],
    kept_components: set[tuple[str, str]],
    summary: ImportSummary,
) -> None:
    rule_pairs = {(r["from"], r["to"]) for r in data.get("transition_rules", [])}
    for rule in TransitionRule.objects.select_related("from_role", "to_role"):
        if (rule.from_role.slug, rule.to_role.slug) not in rule_pairs:
            summary.removed.append(f"rule {rule}")
            rule.delete()
    role_slugs = {r["slug"] for r in data.get("roles", [])} | {DEFAULT_ROLE_SLUG}
    doomed = [r for slug, r in roles.items() if slug not in role_slugs]
    for role in doomed:  # children first, so PROTECT on parent does not trip
        role.parent = None
        role.save(update_fields=["parent"])
    for role in doomed:
        summary.removed.append(f"role {role.slug}")
        role.delete()
    tool_names = {t["name"] for t in data.get("tools", [])}
    for tool in Tool.objects.exclude(name__in=tool_names):
        summary.removed.append(f"tool {tool.name}")
        tool.delete()
    codes = {p["code"] for p in data.get("permissions", [])}
    for perm in Permission.objects.exclude(code__in=codes):
        summary.removed.append(f"permission {perm.code}")
        perm.delete()
    pack_names = {p["name"] for p in data.get("prompt_packs", [])}
    for component in PromptComponent.objects.select_related("pack"):
        if (component.pack.name, component.key) not in kept_components:
            summary.removed.append(f"prompt {component}")
            component.delete()
    for pack in PromptPack.objects.exclude(name__in=pack_names):
        summary.removed.append(f"prompt pack {pack.name}")
        pack.delete()
