"""Checks on what links role data: what a role names (permissions, tools, model endpoints,
its parent, a name another role holds), the tools a document names, transition rules, and
what still uses a role that is to be deleted."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from django.db import models
from django.db.models import ForeignObjectRel, Q

from acode.errors import AcodeError
from roles.access import RoleCycleError, RoleSpec, parent_chain
from roles.mcp.tools import mcp_tool_registered
from roles.models import DEFAULT_ROLE_SLUG, Precondition, Role, TransitionRule
from roles.tools import declared_tools
from roles.validation.roles import string_list


def tool_name_problems(name: str) -> list[str]:
    """A tool row may exist only for a tool acode declares (``roles.tools``): a row enables,
    describes and orders a tool; it cannot make one."""
    if name in declared_tools() or mcp_tool_registered(name):
        return []  # an MCP tool's row may also turn it off, describe it, or allow-list it
    known = ", ".join(sorted(declared_tools()))
    return [f"tool {name}: acode has no such tool (its tools are {known})"]


def transition_rule_problems(
    *, from_slug: Any, to_slug: Any, precondition: Any, known_roles: Collection[str]
) -> list[str]:
    """Everything wrong with one transition rule: admin form, import and service."""
    where = f"transition rule {from_slug}->{to_slug}"
    problems = [
        f"{where}: unknown role {end!r}"
        for end in (from_slug, to_slug)
        if not isinstance(end, str) or end not in known_roles
    ]
    if precondition not in Precondition.values:
        problems.append(f"{where}: precondition must be one of {', '.join(Precondition.values)}")
    if from_slug == to_slug:
        problems.append(f"{where}: a rule must change the role")
    return problems


# -- deleting a role ------------------------------------------------------------------
# Rows that are part of a role, deleted with it: its MCP argument limits.
ROLE_PARTS = frozenset({"roles.mcpargumentlimit"})


def role_uses(role: Role) -> dict[type[models.Model], int]:
    """What still refers to ``role``: how many rows of each model.

    Walks every relation that points at roles, whichever app declares it (sessions,
    jobs, transitions ...), so this app finds them without importing them. Relations
    that let go of a deleted role (``SET_NULL``, such as role versions) do not count.
    """
    wanted: dict[type[models.Model], Q] = {}
    for relation in Role._meta.get_fields(include_hidden=True):
        if not isinstance(relation, ForeignObjectRel) or relation.many_to_many:
            continue
        model = relation.related_model
        if isinstance(model, str) or model._meta.auto_created:
            continue  # the hidden through tables of Role's own many-to-many fields
        if relation.on_delete in (models.SET_NULL, models.SET_DEFAULT, models.DO_NOTHING):
            continue
        if model._meta.label_lower in ROLE_PARTS:
            continue
        wanted[model] = wanted.get(model, Q()) | Q(**{relation.field.name: role})
    counts = {model: model._base_manager.filter(q).count() for model, q in wanted.items()}
    return {model: n for model, n in counts.items() if n}


def role_delete_refusal(
    role: Role, uses: Mapping[type[models.Model], int] | None = None
) -> AcodeError | None:
    """Why ``role`` may not be deleted (ACODE-ROL-005, naming what uses it), or None.

    ``uses`` (rows by model) defaults to :func:`role_uses`; a caller that caught
    Django's ``ProtectedError`` passes what it protected.
    """
    if role.slug == DEFAULT_ROLE_SLUG:
        return AcodeError(
            "ACODE-ROL-005", "The Default role cannot be deleted.", {"role": role.slug}
        )
    if role.protected:
        return AcodeError(
            "ACODE-ROL-009",
            f"Role {role.name!r} is protected and cannot be deleted; unprotect it first "
            "(a draft another admin publishes).",
            {"role": role.slug},
        )
    uses = role_uses(role) if uses is None else uses
    if not uses:
        return None
    listed = ", ".join(f"{n} {_kind(model, n)}" for model, n in uses.items())
    return AcodeError(
        "ACODE-ROL-005",
        f"Role {role.name!r} is still used by {listed}; nothing was deleted. "
        "Move or remove those first.",
        {
            "role": role.slug,
            "used_by": {_kind(model, 2): n for model, n in uses.items()},
            "children": sorted(role.children.values_list("slug", flat=True)),
            "transition_rules": [
                f"{src}->{dst}"
                for src, dst in TransitionRule.objects.filter(Q(from_role=role) | Q(to_role=role))
                .order_by("from_role__slug", "to_role__slug")
                .values_list("from_role__slug", "to_role__slug")
            ],
        },
    )


def _kind(model: type[models.Model], count: int) -> str:
    if model is Role:
        return "child role" if count == 1 else "child roles"
    meta = model._meta
    return str(meta.verbose_name if count == 1 else meta.verbose_name_plural)


def role_reference_problems(
    item: Mapping[str, Any],
    *,
    known_permissions: Collection[str],
    known_tools: Collection[str],
    known_endpoints: Collection[str] | None = None,
) -> list[str]:
    """The permissions, tools and (given ``known_endpoints``) model endpoints a role names
    that do not exist: a preferred or fallback model naming no endpoint would otherwise
    fail only when a job of the role asks it (ACODE-LLM-001)."""
    slug = item.get("slug")
    problems = [
        f"role {slug}: unknown permission {code!r}"
        for code in string_list(item.get("permissions"))
        if code not in known_permissions
    ]
    problems += [
        f"role {slug}: unknown tool {name!r} in allowed_tools"
        for name in string_list(item.get("allowed_tools"))
        if name not in known_tools
    ]
    if known_endpoints is not None:
        problems += model_name_problems(item, known_endpoints)
    return problems


def model_name_problems(item: Mapping[str, Any], known_endpoints: Collection[str]) -> list[str]:
    """A preferred, fallback or reassign model that names no model endpoint (empty: the
    default)."""
    problems = []
    named = [(field, item.get(field)) for field in ("preferred_model", "fallback_model")]
    named += [("reassign_models", name) for name in string_list(item.get("reassign_models"))]
    for field, name in named:
        if isinstance(name, str) and name and name not in known_endpoints:
            known = ", ".join(sorted(known_endpoints)) or "none yet"
            problems.append(
                f"role {item.get('slug')}: {field} {name!r} names no model endpoint (known: "
                f"{known}); add it first (`acode model add`, or admin's Model endpoints), "
                "or leave it empty for the default"
            )
    return problems


def parent_chain_problems(specs: Mapping[str, RoleSpec]) -> list[str]:
    """Roles whose parent is unknown or whose parent chain loops back on itself.

    A child never gets more than its parent (``roles.access.compute_access``), so the
    chain must reach a root.
    """
    problems: list[str] = []
    for slug, spec in specs.items():
        if spec.parent is not None and spec.parent not in specs:
            problems.append(f"role {slug}: unknown parent {spec.parent!r}")
            continue
        try:
            parent_chain(slug, specs)
        except (RoleCycleError, KeyError) as exc:
            problems.append(f"role {slug}: {exc}")
    return problems


def role_name_problems(specs: Mapping[str, RoleSpec]) -> list[str]:
    """Roles named like another role (lookups by name ignore case, so those clash too)."""
    problems: list[str] = []
    holders: dict[str, str] = {}
    for slug, spec in specs.items():
        if not spec.name:
            continue
        holder = holders.setdefault(spec.name.lower(), slug)
        if holder != slug:
            problems.append(f"role {slug}: the name {spec.name!r} is taken by role {holder}")
    return problems


def role_parent_problems(
    *, slug: str, parent_slug: str | None, specs: Mapping[str, RoleSpec]
) -> list[str]:
    """Problems that giving role ``slug`` the parent ``parent_slug`` would make."""
    return parent_chain_problems({**specs, slug: replace(specs[slug], parent=parent_slug)})
