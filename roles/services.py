"""Writes to role data. Admin, API, import and management commands all come through here.

Every write moves the registry stamp (``roles.receivers`` watch the models, so even a
write from the shell is seen). A change that can alter what a role is or gets records
a new version of every role whose content moved (``role_versions_record``); the
importer writes a whole document with ``versioned=False`` and records versions once.
Checks live in ``roles.validation``; this module raises them as ``AcodeError``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import ProtectedError

from acode.errors import AcodeError
from roles.access import compute_access, content_hash, role_snapshot
from roles.models import (
    ContextStrategy,
    Permission,
    PromptComponent,
    PromptPack,
    Role,
    RoleVersion,
    Tool,
    TransitionRule,
)
from roles.registry import read_specs
from roles.signals import prompt_rejected, role_data_changed, role_version_created
from roles.validation import (
    ROLE_SCALARS,
    check_prompt_text,
    describe_findings,
    parent_chain_problems,
    role_delete_refusal,
    role_format_problems,
    role_name_problems,
    role_reference_problems,
    role_spec,
    role_text_findings,
    transition_rule_problems,
)

logger = logging.getLogger(__name__)

# What a role created through the API holds for every field it was not given.
NEW_ROLE: Mapping[str, Any] = {
    "description": "",
    "colour": "#64748b",
    "permissions": [],
    "allowed_tools": [],
    "capabilities": [],
    "constraints": [],
    "context_strategy": ContextStrategy.ADAPTIVE.value,
    "preferred_model": "",
    "fallback_model": "",
    "queue": "agents",
    "max_llm_calls": 20,
    "max_tokens": 50_000,
    "timeout_seconds": 600,
    "parent": None,
    "write_paths": [],
    "command_patterns": [],
    "answer_sets_plan": False,
}


def _actor_label(actor: str | None, user: AbstractBaseUser | None) -> str:
    if actor:
        return actor
    if user is not None:
        return user.get_username()
    return "system"


def _changed(kind: str, action: str, name: str, actor: str) -> None:
    role_data_changed.send(sender=None, kind=kind, action=action, name=name, actor=actor)


# -- versions and refusals ------------------------------------------------------------
@transaction.atomic
def role_versions_record(
    *,
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    slugs: Iterable[str] | None = None,
) -> list[RoleVersion]:
    """Store a new immutable version of every role (or of ``slugs``) whose content changed.

    A role's content includes the tools it gets, so editing a tool or a permission
    versions every role whose effective tools moved.
    """
    id_specs, tools = read_specs()
    specs = {spec.slug: spec for _, spec in id_specs}
    ids = {spec.slug: pk for pk, spec in id_specs}
    wanted = set(slugs) if slugs is not None else set(specs)
    latest: dict[str, tuple[int, str]] = {}
    for slug, number, digest in (
        RoleVersion.objects.filter(role_slug__in=wanted)
        .order_by("role_slug", "-number")
        .values_list("role_slug", "number", "content_hash")
    ):
        latest.setdefault(slug, (number, digest))
    created: list[RoleVersion] = []
    label = _actor_label(actor, user)
    for slug in sorted(wanted & set(specs)):
        snapshot = role_snapshot(specs[slug], compute_access(slug, specs, tools))
        digest = content_hash(snapshot)
        number, stored = latest.get(slug, (0, ""))
        if stored == digest:
            continue
        version = RoleVersion.objects.create(
            role_id=ids[slug],
            role_slug=slug,
            number=number + 1,
            content_hash=digest,
            snapshot=snapshot,
            actor=label,
            user_id=user.pk if user is not None else None,
        )
        role_version_created.send(sender=RoleVersion, version=version)
        created.append(version)
    return created


def prompt_rejection_record(*, where: str, actor: str, findings: list[dict[str, Any]]) -> None:
    """Report refused prompt text (``roles.signals.prompt_rejected``; the audit log keeps it)."""
    prompt_rejected.send(sender=PromptComponent, where=where, actor=actor, findings=findings)


# -- roles ----------------------------------------------------------------------------
def role_write(
    *,
    data: Mapping[str, Any],
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    create: bool,
    slug: str | None = None,
) -> str:
    """Create a role, or update one (partial data merged over its content); its slug.

    The checks are the importer's and admin's (``roles.validation``): ACODE-PRM-001 for
    dangerous text, ACODE-ROL-004 naming every problem with the data itself, 404 for what
    it names that does not exist (ACODE-API-404 permissions and tools, ACODE-ROL-001 the
    parent), ACODE-API-409 for a taken slug or name and a parent chain that loops.
    """
    id_specs, tools = read_specs()
    specs = {spec.slug: spec for _, spec in id_specs}
    if not create and slug is None:
        raise ValueError("role_write(create=False) needs the slug of the role to update")
    contents = {s: spec.content() for s, spec in specs.items()}
    content = _role_content(data, specs=contents, slug=None if create else slug)
    if create and content["slug"] in specs:
        raise AcodeError(
            "ACODE-API-409",
            f"A role with slug {content['slug']!r} already exists.",
            {"slug": content["slug"]},
        )
    findings = role_text_findings(content)
    if findings:
        label = _actor_label(actor, user)
        prompt_rejection_record(where=f"role {content['slug']}", actor=label, findings=findings)
        raise AcodeError(
            "ACODE-PRM-001",
            f"Dangerous content in role text: {describe_findings(findings)}",
            {"findings": findings},
        )
    problems = role_format_problems(content)
    if problems:
        raise AcodeError(
            "ACODE-ROL-004", "Invalid role: " + "; ".join(problems), {"problems": problems}
        )
    known_permissions = set(Permission.objects.values_list("code", flat=True))
    unknown = role_reference_problems(
        content, known_permissions=known_permissions, known_tools={t.name for t in tools}
    )
    if unknown:
        raise AcodeError("ACODE-API-404", "; ".join(unknown), {"problems": unknown})
    after = {**specs, content["slug"]: role_spec(content)}
    parent = content.get("parent")
    if parent is not None and parent not in after:
        raise AcodeError(
            "ACODE-ROL-001",
            f"Unknown parent role {parent!r}.",
            {"role": parent, "known_roles": sorted(after)},
        )
    clashes = role_name_problems(after) + parent_chain_problems(after)
    if clashes:
        raise AcodeError("ACODE-API-409", "; ".join(clashes), {"problems": clashes})
    with transaction.atomic():
        role_upsert(content=content)
        role_parents_set(parents={content["slug"]: content.get("parent")})
        role_versions_record(actor=actor, user=user)
    return str(content["slug"])


def _role_content(
    data: Mapping[str, Any], *, specs: Mapping[str, dict[str, Any]], slug: str | None
) -> dict[str, Any]:
    if slug is None:
        new_slug = data.get("slug")
        return {**NEW_ROLE, "slug": new_slug, "prompt_key": new_slug, **data}
    content = {**specs[slug], **data}
    if content.get("slug") != slug:
        raise AcodeError(
            "ACODE-ROL-004", "A role's slug cannot change.", {"field": "slug", "slug": slug}
        )
    return content


def role_upsert(*, content: Mapping[str, Any]) -> Role:
    """Write one checked role from plain data: fields, permissions, allowed tools.

    Not its parent (``role_parents_set``: an import names parents defined further down)
    and no versions: ``role_write`` and the importer record them once for the write.
    """
    role = Role.objects.filter(slug=content["slug"]).first() or Role(slug=content["slug"])
    for name in ROLE_SCALARS:
        if name in content:
            setattr(role, name, content[name])
    for name in ("capabilities", "constraints", "write_paths", "command_patterns"):
        setattr(role, name, list(content.get(name) or []))
    role.save()
    role.permissions.set(Permission.objects.filter(code__in=content.get("permissions") or []))
    role.allowed_tools.set(Tool.objects.filter(name__in=content.get("allowed_tools") or []))
    return role


def role_parents_set(*, parents: Mapping[str, str | None]) -> None:
    """Set each role's parent (by slug; None for no parent), saving only what moved."""
    wanted = set(parents) | {p for p in parents.values() if p}
    roles = {r.slug: r for r in Role.objects.filter(slug__in=wanted)}
    for slug, parent_slug in parents.items():
        role, parent = roles[slug], roles[parent_slug] if parent_slug else None
        if role.parent_id != (parent.pk if parent else None):
            role.parent = parent
            role.save(update_fields=["parent"])


@transaction.atomic
def role_save(
    *,
    role: Role,
    permissions: Iterable[Permission],
    allowed_tools: Iterable[Tool],
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
) -> Role:
    """Save a role edited as a model (the admin form, already checked), then version it."""
    role.save()
    role.permissions.set(list(permissions))
    role.allowed_tools.set(list(allowed_tools))
    role_saved(role=role, actor=actor, user=user)
    return role


def role_saved(
    *, role: Role, actor: str | None = None, user: AbstractBaseUser | None = None
) -> None:
    """After a role and its relations were saved: check the parent chain, then version."""
    problems = parent_chain_problems({spec.slug: spec for _, spec in read_specs()[0]})
    if problems:
        raise AcodeError("ACODE-ROL-004", "; ".join(problems), {"field": "parent"})
    role_versions_record(actor=actor, user=user)


@transaction.atomic
def role_delete(
    *, role: Role, actor: str | None = None, user: AbstractBaseUser | None = None
) -> None:
    """Delete a role nothing uses; otherwise ACODE-ROL-005 names the users, deletes nothing.

    Transition rules, child roles, sessions and jobs all count: a rule is never deleted
    as a side effect of deleting its role.
    """
    refusal = role_delete_refusal(role)
    if refusal is not None:
        raise refusal
    try:
        role.delete()
    except ProtectedError as exc:  # something started using the role since the check
        refusal = role_delete_refusal(role, Counter(type(o) for o in exc.protected_objects))
        assert refusal is not None
        raise refusal from exc
    _changed("role", "deleted", role.slug, _actor_label(actor, user))


# -- tools and permissions ------------------------------------------------------------
@transaction.atomic
def tool_save(
    *,
    tool: Tool,
    required_permissions: Iterable[Permission],
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    versioned: bool = True,
) -> Tool:
    """Save a tool and what it requires; roles whose tools moved get a new version."""
    tool.save()
    tool.required_permissions.set(list(required_permissions))
    _changed("tool", "saved", tool.name, _actor_label(actor, user))
    if versioned:
        role_versions_record(actor=actor, user=user)
    return tool


@transaction.atomic
def tool_delete(
    *,
    tool: Tool,
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    versioned: bool = True,
) -> None:
    """Delete a tool; roles that had it get a new version."""
    tool.delete()
    _changed("tool", "deleted", tool.name, _actor_label(actor, user))
    if versioned:
        role_versions_record(actor=actor, user=user)


@transaction.atomic
def permission_save(
    *,
    permission: Permission,
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    versioned: bool = True,
) -> Permission:
    """Save a permission; a renamed code changes the roles holding it, so they are versioned."""
    permission.save()
    _changed("permission", "saved", permission.code, _actor_label(actor, user))
    if versioned:
        role_versions_record(actor=actor, user=user)
    return permission


@transaction.atomic
def permission_delete(
    *,
    permission: Permission,
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    versioned: bool = True,
) -> None:
    """Delete a permission (roles and tools lose it); roles whose access moved are versioned."""
    permission.delete()
    _changed("permission", "deleted", permission.code, _actor_label(actor, user))
    if versioned:
        role_versions_record(actor=actor, user=user)


# -- transition rules -----------------------------------------------------------------
def transition_rule_save(
    *, rule: TransitionRule, actor: str | None = None, user: AbstractBaseUser | None = None
) -> TransitionRule:
    """Save a transition rule; ACODE-ROL-004 if it does not change the role or is malformed."""
    ends = (rule.from_role.slug, rule.to_role.slug)
    problems = transition_rule_problems(
        from_slug=ends[0], to_slug=ends[1], precondition=rule.precondition, known_roles=ends
    )
    if problems:
        raise AcodeError("ACODE-ROL-004", "; ".join(problems), {"problems": problems})
    rule.save()
    _changed("transition rule", "saved", str(rule), _actor_label(actor, user))
    return rule


def transition_rule_delete(
    *, rule: TransitionRule, actor: str | None = None, user: AbstractBaseUser | None = None
) -> None:
    """Delete a transition rule."""
    rule.delete()
    _changed("transition rule", "deleted", str(rule), _actor_label(actor, user))


# -- prompt packs ---------------------------------------------------------------------
def prompt_pack_save(*, pack: PromptPack, actor: str | None = None) -> PromptPack:
    """Save a prompt pack's name, version and description (its texts: prompt_component_save)."""
    pack.save()
    _changed("prompt pack", "saved", pack.name, actor or "system")
    return pack


def prompt_pack_delete(*, pack: PromptPack, actor: str | None = None) -> None:
    """Delete a prompt pack and its components."""
    pack.delete()
    _changed("prompt pack", "deleted", pack.name, actor or "system")


def prompt_component_save(
    *, component: PromptComponent, actor: str | None = None
) -> PromptComponent:
    """Save a prompt component; dangerous text is refused with ACODE-PRM-001."""
    try:
        check_prompt_text(component.key, component.content)
    except AcodeError as exc:
        prompt_rejection_record(
            where=f"prompt {component.key}",
            actor=actor or "system",
            findings=exc.details.get("findings", []),
        )
        raise
    component.save()
    _changed("prompt", "saved", str(component), actor or "system")
    return component


def prompt_component_delete(*, component: PromptComponent, actor: str | None = None) -> None:
    """Delete one prompt text of a pack."""
    component.delete()
    _changed("prompt", "deleted", str(component), actor or "system")
