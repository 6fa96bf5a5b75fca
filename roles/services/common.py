"""What every role-data write shares: who did it, its audit row and live push, and role
versions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from acode.live import roles_changed_on_commit
from audit.models import AuditEventType
from audit.services import audit_record
from roles.access import compute_access, content_hash, role_snapshot
from roles.decision.diff import PolicyDiff
from roles.decision.limits import limits_of
from roles.mcp.tools import argument_limits
from roles.models import RoleVersion
from roles.registry import read_specs
from roles.services.policy import tool_declarations
from roles.services.protection import protected_widening, protected_widening_check


def actor_label(actor: str | None, user: AbstractBaseUser | None) -> str:
    """Who made a change, as the audit names them."""
    if actor:
        return actor
    if user is not None:
        return user.get_username()
    return "system"


def data_changed(
    kind: str,
    action: str,
    name: str,
    actor: str,
    details: Mapping[str, Any] | None = None,
    *,
    live: bool = True,
) -> None:
    """Record a write to role data, in the write's transaction: its audit row (every
    change, deletions included, with ``details`` added to the row's) and, with ``live``,
    the push to open pages once the transaction commits (none if it rolls back; one per
    transaction). ``live=False`` for what no page shows: drafts, endpoints, accounts."""
    audit_record(
        event_type=AuditEventType.ROLE_DATA_CHANGED,
        actor=actor,
        target=f"{kind} {name}"[:1000],
        result=action,
        details={"kind": kind, "name": name, **dict(details or {})},
    )
    if live:
        roles_changed_on_commit()


@transaction.atomic
def role_versions_record(
    *,
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    slugs: Iterable[str] | None = None,
) -> list[RoleVersion]:
    """Store a new immutable version of every role (or of ``slugs``) whose content changed.

    A role's content includes the tools it gets and the argument limits it is held to, so
    editing a tool, a permission or a limit versions every role whose content moved. A
    protected role that would widen is refused here, for every kind of write
    (``roles.services.protection``, ACODE-ROL-015); call it inside the write's transaction.
    """
    id_specs, tools = read_specs()
    limits = argument_limits()
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
    moved: list[tuple[str, int, str, dict[str, Any]]] = []
    widened: dict[str, PolicyDiff] = {}  # protected roles this write would widen
    known = tool_declarations(tools)
    for slug in sorted(wanted & set(specs)):
        access = compute_access(slug, specs, tools)
        snapshot = role_snapshot(specs[slug], access, limits_of(slug, specs, limits))
        digest = content_hash(snapshot)
        number, stored = latest.get(slug, (0, ""))
        if stored == digest:
            continue
        if specs[slug].protected and number:
            found = protected_widening(_snapshot(slug, number), snapshot, declarations=known)
            if found is not None:
                widened[slug] = found
        moved.append((slug, number + 1, digest, snapshot))
    protected_widening_check(widened)  # raises before any version: the write rolls back
    created: list[RoleVersion] = []
    label = actor_label(actor, user)
    for slug, number, digest, snapshot in moved:
        version = RoleVersion.objects.create(
            role_id=ids[slug],
            role_slug=slug,
            number=number,
            content_hash=digest,
            snapshot=snapshot,
            actor=label,
            user_id=user.pk if user is not None else None,
        )
        _version_audit(version)
        created.append(version)
    if created:
        roles_changed_on_commit()
    return created


def _version_audit(version: RoleVersion) -> None:
    """A new role version's audit row, in the version's transaction."""
    audit_record(
        event_type=AuditEventType.ROLE_EDITED,
        actor=version.actor,
        role=version.role_slug,
        target=f"{version.role_slug} v{version.number}",
        result="versioned",
        details={"number": version.number, "content_hash": version.content_hash},
    )


def _snapshot(slug: str, number: int) -> dict[str, Any]:
    row = RoleVersion.objects.filter(role_slug=slug, number=number).values("snapshot").first()
    return dict(row["snapshot"]) if row else {}


def prompt_rejection_record(*, where: str, actor: str, findings: list[dict[str, Any]]) -> None:
    """Record refused prompt text in the audit log (in the caller's transaction)."""
    audit_record(
        event_type=AuditEventType.PROMPT_REJECTED,
        actor=actor,
        target=where,
        result="ACODE-PRM-001",
        details={"findings": findings},
    )
