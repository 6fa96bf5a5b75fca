"""The one place that decides whether a role write goes live or becomes a draft.

A protected role is never changed by one person: every write to it (admin form, API, CLI,
import; unprotecting it included) goes through ``role_draft_route``, which keeps the
proposed content as a ``RoleDraft`` (its diff against the version it is based on and its
example results) and writes nothing live. Protecting an unprotected role, and every write
to an unprotected role, goes live as before. Publishing and rejecting are in
``roles.services.draft_review``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from roles.access import DELEGATION_DEFAULTS, RoleSpec
from roles.decision import examples_check
from roles.mcp.tools import argument_limits
from roles.models import Role, RoleDraft, RoleVersion
from roles.registry import read_specs
from roles.services.common import actor_label, data_changed
from roles.services.examples import examples_refusal
from roles.validation import role_spec


@dataclass(frozen=True)
class RoleWritten:
    """What a role write did: the role's slug, and the draft it became (None: live)."""

    slug: str
    draft: RoleDraft | None = None


def role_needs_review(slug: str) -> bool:
    """Whether a change to the stored role ``slug`` must be reviewed (it is protected)."""
    return Role.objects.filter(slug=slug, protected=True).exists()


def role_draft_route(
    *,
    content: Mapping[str, Any],
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
) -> RoleDraft | None:
    """The draft a write of ``content`` (a role's full, checked content) becomes, or None
    when it goes live: the role is not protected (yet), or nothing would change."""
    slug = str(content["slug"])
    if not role_needs_review(slug):
        return None
    specs = {spec.slug: spec for _, spec in read_specs()[0]}
    before = specs[slug].content()
    proposed = _normalised(content)
    diff = role_content_diff(before, proposed)
    if not diff:
        return None
    return role_draft_create(
        slug=slug, content=proposed, diff=diff, specs=specs, actor=actor, user=user
    )


# The keys ``RoleSpec.content`` names only when they differ from these (so that roles
# made before each existed keep their content hash): a diff of contents ignores them unset.
OPTIONAL_CONTENT: Mapping[str, Any] = {
    "examples": [], "protected": False, "reassign_models": [], "reasoning_effort": "",
    "custom": False, "allowed_tool_groups": [], **DELEGATION_DEFAULTS,
}  # fmt: skip


def _normalised(content: Mapping[str, Any]) -> dict[str, Any]:
    """``content`` as ``RoleSpec.content`` gives it (sorted names, optional keys only
    when set), so a diff lists only what really changes."""
    data = dict(content)
    for key in ("permissions", "allowed_tools", "allowed_tool_groups"):
        data[key] = sorted(data.get(key) or [])
    for key in ("capabilities", "constraints", "write_paths", "command_patterns"):
        data[key] = list(data.get(key) or [])
    for key, unset in OPTIONAL_CONTENT.items():  # named only when set, as content names them
        if key in data and (data[key] or None) == (unset or None):
            data.pop(key)
    return data


def role_content_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per field that differs: ``{"field", "before", "after"}`` (None where absent)."""
    return [
        {"field": key, "before": before.get(key), "after": after.get(key)}
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    ]


@transaction.atomic
def role_draft_create(
    *,
    slug: str,
    content: dict[str, Any],
    diff: list[dict[str, Any]],
    specs: Mapping[str, RoleSpec],
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
) -> RoleDraft:
    """Keep a checked change to protected role ``slug`` as an open draft, with its example
    results (a failing example refuses it, ACODE-ROL-008, as it refuses any save); audited.
    """
    _, tools = read_specs()
    results = examples_check(
        {**specs, slug: role_spec(content)}, tools, {slug}, limits=argument_limits()
    )
    refusal = examples_refusal(results)
    if refusal is not None:
        raise refusal
    base = RoleVersion.objects.filter(role_slug=slug).order_by("-number").first()
    label = actor_label(actor, user)
    draft = RoleDraft.objects.create(
        role=Role.objects.get(slug=slug),
        role_slug=slug,
        base_version=base,
        base_number=base.number if base else 0,
        content=content,
        diff=diff,
        example_results=[r.as_data() for r in results],
        author_id=user.pk if user is not None else None,
        author_name=label,
    )
    data_changed(
        "role draft",
        "drafted",
        f"{slug} #{draft.pk}",
        label,
        {"draft": draft.pk, "role": slug, "base_version": draft.base_number,
         "fields": [d["field"] for d in diff]},
        live=False,
    )  # fmt: skip
    return draft
