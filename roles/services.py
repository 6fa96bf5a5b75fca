"""Writes to role data. Admin, API, import and management commands all come through here."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from acode.errors import AcodeError
from roles.access import (
    RoleCycleError,
    compute_access,
    content_hash,
    glob_problem,
    parent_chain,
    role_snapshot,
)
from roles.models import (
    DEFAULT_ROLE_SLUG,
    ContextStrategy,
    PromptComponent,
    RegistryStamp,
    Role,
    RoleVersion,
)
from roles.prompts import check_prompt_text, find_dangerous
from roles.registry import read_specs, registry
from roles.signals import prompt_rejected, role_version_created

logger = logging.getLogger(__name__)

SEED_FILE = Path(__file__).resolve().parent / "seed" / "acode-standard.yaml"
_COLOUR = re.compile(r"^#[0-9a-fA-F]{6}$")


def stamp_bump() -> None:
    """Mark role data as changed, in the caller's transaction; every registry reloads.

    Called by signal handlers (``roles.signals``) on every write to role data, whatever
    made it (admin, API, import, shell), so no writer can forget it.
    """
    updated = RegistryStamp.objects.filter(pk=1).update(token=uuid.uuid4().hex)
    if not updated:
        RegistryStamp.objects.get_or_create(pk=1, defaults={"token": uuid.uuid4().hex})
    registry.invalidate()  # this process knows already; others compare stamps


def _actor_label(actor: str | None, user: AbstractBaseUser | None) -> str:
    if actor:
        return actor
    if user is not None:
        return user.get_username()
    return "system"


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


def role_field_problems(data: Mapping[str, Any]) -> list[str]:
    """Problems with one role's fields (not references): for admin forms and imports."""
    problems: list[str] = []
    slug = str(data.get("slug", ""))
    colour = data.get("colour")
    if colour is not None and not _COLOUR.match(str(colour)):
        problems.append(f"role {slug}: colour {colour!r} is not a hex colour like #2563eb")
    strategy = data.get("context_strategy")
    if strategy is not None and strategy not in ContextStrategy.values:
        problems.append(
            f"role {slug}: context_strategy {strategy!r} is not one of {', '.join(ContextStrategy.values)}"
        )
    for glob in data.get("write_paths") or []:
        problem = glob_problem(str(glob))
        if problem:
            problems.append(f"role {slug}: write_paths {problem}")
    for pattern in data.get("command_patterns") or []:
        if not str(pattern).strip():
            problems.append(f"role {slug}: command_patterns has an empty pattern")
    for budget in ("max_llm_calls", "max_tokens", "timeout_seconds"):
        value = data.get(budget)
        if value is not None and (not isinstance(value, int) or value < 1):
            problems.append(f"role {slug}: {budget} must be a positive integer")
    return problems


def role_text_findings(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Dangerous prompt patterns in role text that flows into prompts (constraints etc.)."""
    out: list[dict[str, Any]] = []
    for field_name in ("description", "capabilities", "constraints"):
        value = data.get(field_name) or ""
        texts = value if isinstance(value, list) else [value]
        for text in texts:
            for f in find_dangerous(str(text)):
                out.append(
                    {
                        "where": f"role {data.get('slug')}.{field_name}",
                        "rule": f.rule,
                        "match": f.match,
                    }
                )
    return out


def role_check_text(data: Mapping[str, Any]) -> None:
    """Raise ACODE-PRM-001 if the role's prompt-bound text is dangerous."""
    findings = role_text_findings(data)
    if findings:
        described = "; ".join(f"{f['where']}: {f['rule']}: {f['match']!r}" for f in findings)
        raise AcodeError(
            "ACODE-PRM-001", f"Dangerous content in role text: {described}", {"findings": findings}
        )


def role_check_parent(*, role: Role, parent: Role | None) -> None:
    """Raise ACODE-ROL-004 if ``parent`` would make a cycle."""
    current = parent
    seen = {role.pk}
    while current is not None:
        if current.pk in seen:
            raise AcodeError(
                "ACODE-ROL-004",
                f"Role {role.slug!r} cannot have parent {parent.slug if parent else None!r}: "
                "that makes a parent cycle.",
                {"field": "parent"},
            )
        seen.add(current.pk)
        current = current.parent


def role_saved(
    *, role: Role, actor: str | None = None, user: AbstractBaseUser | None = None
) -> None:
    """After a role and its relations were saved: validate the chain, version, invalidate."""
    id_specs, _ = read_specs()
    specs = {spec.slug: spec for _, spec in id_specs}
    try:
        parent_chain(role.slug, specs)
    except RoleCycleError as exc:
        raise AcodeError("ACODE-ROL-004", str(exc), {"field": "parent"}) from exc
    role_versions_record(actor=actor, user=user)


def role_delete(
    *, role: Role, actor: str | None = None, user: AbstractBaseUser | None = None
) -> None:
    """Delete a role; the Default role and roles that others depend on are protected."""
    if role.slug == DEFAULT_ROLE_SLUG:
        raise AcodeError(
            "ACODE-ROL-005", "The Default role cannot be deleted.", {"role": role.slug}
        )
    if role.children.exists():
        raise AcodeError(
            "ACODE-ROL-005",
            f"Role {role.name!r} is the parent of other roles; change those first.",
            {"role": role.slug, "children": list(role.children.values_list("slug", flat=True))},
        )
    role.delete()
    logger.info("role %s deleted by %s", role.slug, _actor_label(actor, user))


def prompt_component_save(
    *, component: PromptComponent, actor: str | None = None
) -> PromptComponent:
    """Save a prompt component; dangerous text is refused with ACODE-PRM-001."""
    try:
        check_prompt_text(component.key, component.content)
    except AcodeError as exc:
        prompt_rejected.send(
            sender=PromptComponent,
            where=f"prompt {component.key}",
            actor=actor or "system",
            findings=exc.details.get("findings", []),
        )
        raise
    component.save()
    logger.info("prompt %s saved by %s", component, actor or "system")
    return component


def seed_defaults(*, using: str = "default") -> bool:
    """Load the shipped role set when the database has no roles; True if it did.

    When roles exist, record versions for any whose content a migration changed.
    """
    if using != "default":
        return False
    if Role.objects.exists():
        role_versions_record(actor="migration")
        return False
    from roles.portability import import_definitions, load_yaml

    import_definitions(load_yaml(SEED_FILE.read_text(encoding="utf-8")), actor="system")
    logger.info("seeded default roles from %s", SEED_FILE.name)
    return True


RESERVED_SLUGS = ("export", "import")


def role_write(
    *,
    data: dict[str, Any],
    actor: str | None = None,
    user: Any = None,
    create: bool,
    slug: str | None = None,
) -> str:
    """Create a role, or update one (partial data merged over its content), via import.

    Going through the importer gives API writes the same validation, prompt checks and
    versioning as admin and YAML imports. Returns the role's slug.
    """
    from roles.portability import FORMAT, import_definitions

    id_specs, _ = read_specs()
    current = {spec.slug: spec.content() for _, spec in id_specs}
    if create:
        new_slug = str(data.get("slug", ""))
        if new_slug in current:
            raise AcodeError(
                "ACODE-API-409",
                f"A role with slug {new_slug!r} already exists.",
                {"slug": new_slug},
            )
        content = {
            "slug": new_slug,
            "description": "",
            "colour": "#64748b",
            "permissions": [],
            "allowed_tools": [],
            "capabilities": [],
            "constraints": [],
            "prompt_key": new_slug,
            "context_strategy": ContextStrategy.ADAPTIVE,
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
            **data,
        }
    else:
        assert slug is not None
        content = {**current[slug], **data}
        if content.get("slug") != slug:
            raise AcodeError(
                "ACODE-ROL-004", "A role's slug cannot change.", {"field": "slug", "slug": slug}
            )
    if str(content.get("slug")) in RESERVED_SLUGS:
        raise AcodeError(
            "ACODE-ROL-004", f"{content.get('slug')!r} is a reserved slug.", {"field": "slug"}
        )
    import_definitions({"format": FORMAT, "roles": [content]}, actor=actor, user=user)
    return str(content["slug"])
