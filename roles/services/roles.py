"""Writes to roles: create or update from data (API, import), save from admin, delete.

Every write to an existing role asks ``roles.services.drafts.role_draft_route`` first: a
change to a protected role becomes a draft and nothing live changes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import ProtectedError

from acode.errors import AcodeError
from roles.access import DELEGATION_DEFAULTS, RoleSpec
from roles.models import ContextStrategy, ModelEndpoint, Permission, Role, Tool
from roles.registry import read_specs
from roles.services.common import (
    actor_label,
    data_changed,
    prompt_rejection_record,
    role_versions_record,
)
from roles.services.drafts import RoleWritten, role_draft_route, role_needs_review
from roles.services.examples import role_examples_enforce
from roles.validation import (
    CUSTOM_LOCKED_CODE,
    ROLE_SCALARS,
    custom_lock_problems,
    describe_findings,
    parent_chain_problems,
    role_delete_refusal,
    role_format_problems,
    role_name_problems,
    role_reference_problems,
    role_spec,
    role_text_findings,
)

# What a role created through the API holds for every field it was not given.
NEW_ROLE: Mapping[str, Any] = {
    "description": "",
    "colour": "#64748b",
    "permissions": [],
    "allowed_tools": [],
    "allowed_tool_groups": [],
    "capabilities": [],
    "constraints": [],
    "context_strategy": ContextStrategy.ADAPTIVE.value,
    "preferred_model": "",
    "fallback_model": "",
    "reassign_models": [],
    "reasoning_effort": "",
    "queue": "agents",
    "max_llm_calls": 20,
    "max_tokens": 50_000,
    "timeout_seconds": 600,
    "parent": None,
    "write_paths": [],
    "command_patterns": [],
    "answer_sets_plan": False,
    "protected": False,
}


def role_write(
    *,
    data: Mapping[str, Any],
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    create: bool,
    slug: str | None = None,
) -> RoleWritten:
    """Create a role, or update one (partial data merged over its content).

    The checks are the importer's and admin's (``roles.validation``): ACODE-PRM-001 for
    dangerous text, ACODE-ROL-004 naming every problem with the data itself, 404 for what
    it names that does not exist (ACODE-API-404 permissions and tools, ACODE-ROL-001 the
    parent), ACODE-API-409 for a taken slug or name and a parent chain that loops, and
    ACODE-ROL-008 when one of its examples (or a child role's) fails; nothing is written.
    A change to a protected role becomes a draft (``roles.services.drafts``) and writes
    nothing live.
    """
    specs = {spec.slug: spec for _, spec in read_specs()[0]}
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
    _custom_lock_check(content, specs)
    _role_content_check(content, label=actor_label(actor, user))
    _role_fit_check(content, specs)
    draft = role_draft_route(content=content, actor=actor, user=user)
    if draft is not None:
        return RoleWritten(str(content["slug"]), draft)
    _role_apply(content, actor=actor, user=user)
    return RoleWritten(str(content["slug"]))


def role_reviewed_write(
    *, content: Mapping[str, Any], user: AbstractBaseUser | None = None
) -> None:
    """Write a published draft's content live: ``role_write``'s checks and write, past the
    review it has had (``roles.services.draft_review`` is the only caller)."""
    specs = {spec.slug: spec for _, spec in read_specs()[0]}
    _custom_lock_check(content, specs)
    _role_content_check(content, label=actor_label(None, user))
    _role_fit_check(content, specs)
    _role_apply(content, user=user)


def _role_apply(
    content: Mapping[str, Any], *, actor: str | None = None, user: AbstractBaseUser | None
) -> None:
    with transaction.atomic():
        role_upsert(content=content)
        role_parents_set(parents={content["slug"]: content.get("parent")})
        role_examples_enforce(saved={content["slug"]})
        role_versions_record(actor=actor, user=user)


def _custom_lock_check(content: Mapping[str, Any], specs: Mapping[str, RoleSpec]) -> None:
    """A custom agent's role never names write, execute or network permissions and stays
    custom (ACODE-ROL-016)."""
    stored = specs.get(str(content.get("slug")))
    problems = custom_lock_problems(content, was_custom=bool(stored and stored.custom))
    if problems:
        raise AcodeError(CUSTOM_LOCKED_CODE, "; ".join(problems), {"problems": problems})


def _role_content_check(content: Mapping[str, Any], *, label: str | None) -> None:
    """The role's data on its own: dangerous text (ACODE-PRM-001, recorded as ``label``'s;
    None: a draft that saves nothing, not recorded), then its form and fields
    (ACODE-ROL-004)."""
    findings = role_text_findings(content)
    if findings:
        if label is not None:
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


def _role_fit_check(content: Mapping[str, Any], specs: Mapping[str, RoleSpec]) -> None:
    """The role against what exists: what it names (404), its parent (ACODE-ROL-001), its
    name and parent chain among the other roles (409)."""
    unknown = role_reference_problems(
        content,
        known_permissions=set(Permission.objects.values_list("code", flat=True)),
        known_tools=set(Tool.objects.values_list("name", flat=True)),
        known_endpoints=set(ModelEndpoint.objects.values_list("name", flat=True)),
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
    # A role's content names "protected" only when set (``RoleSpec.content``).
    role.protected = bool(content.get("protected", False))
    # A custom agent stays one, whatever a later write says (issue 41).
    stored_custom = bool(role.pk and Role.objects.filter(pk=role.pk, custom=True).exists())
    role.custom = stored_custom or bool(content.get("custom", False))
    for name, default in DELEGATION_DEFAULTS.items():  # named only when not the default
        setattr(role, name, content.get(name, default))
    for name in _MODEL_LISTS:
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


def role_save(
    *,
    role: Role,
    permissions: Iterable[Permission],
    allowed_tools: Iterable[Tool],
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
) -> RoleWritten:
    """Save a role edited as a model (the admin form, already checked), then version it;
    a protected role's edit becomes a draft instead (``roles.services.drafts``)."""
    permissions, allowed_tools = list(permissions), list(allowed_tools)
    content = _model_content(role, permissions, allowed_tools)
    was_custom = bool(role.pk and Role.objects.filter(pk=role.pk, custom=True).exists())
    problems = custom_lock_problems(content, was_custom=was_custom)
    if problems:
        raise AcodeError(CUSTOM_LOCKED_CODE, "; ".join(problems), {"problems": problems})
    role.custom = role.custom or was_custom
    if role.pk is not None:
        stored = Role.objects.filter(pk=role.pk).values_list("slug", flat=True).first()
        if stored is not None and stored != role.slug and role_needs_review(stored):
            raise AcodeError(
                "ACODE-ROL-004", "A protected role's slug cannot change.", {"field": "slug"}
            )
        draft = role_draft_route(
            content=_model_content(role, permissions, allowed_tools), actor=actor, user=user
        )
        if draft is not None:
            return RoleWritten(role.slug, draft)
    with transaction.atomic():
        role.save()
        role.permissions.set(permissions)
        role.allowed_tools.set(allowed_tools)
        role_saved(role=role, actor=actor, user=user)
    return RoleWritten(role.slug)


def _model_content(
    role: Role, permissions: list[Permission], allowed_tools: list[Tool]
) -> dict[str, Any]:
    """An unsaved role model's content, as ``RoleSpec.content`` gives a stored one's."""
    content: dict[str, Any] = {name: getattr(role, name) for name in ROLE_SCALARS}
    content.update(
        slug=role.slug,
        permissions=[p.code for p in permissions],
        allowed_tools=[t.name for t in allowed_tools],
        parent=role.parent.slug if role.parent else None,
        **{k: list(getattr(role, k) or []) for k in _MODEL_LISTS},
    )
    if not content["custom"]:  # as ``RoleSpec.content``: named only when set
        del content["custom"]
    for name, default in DELEGATION_DEFAULTS.items():
        if content[name] == default:
            del content[name]
    return content


_MODEL_LISTS = (
    "allowed_tool_groups",
    "capabilities",
    "constraints",
    "write_paths",
    "command_patterns",
    "examples",
    "reassign_models",
)


def role_saved(
    *, role: Role, actor: str | None = None, user: AbstractBaseUser | None = None
) -> None:
    """After a role and its relations were saved: check the parent chain, then version."""
    problems = parent_chain_problems({spec.slug: spec for _, spec in read_specs()[0]})
    if problems:
        raise AcodeError("ACODE-ROL-004", "; ".join(problems), {"field": "parent"})
    role_examples_enforce(saved={role.slug})
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
    data_changed("role", "deleted", role.slug, actor_label(actor, user))
