"""Publishing or rejecting a draft of a protected role: another admin's decision.

Publishing applies the draft through the same role write as any live edit
(``roles.services.roles.role_reviewed_write``: checks, examples, a new version, the
registry and live pages), and only when the draft is open, its base is still the role's
current version, and the publisher holds ``roles.publish_roledraft`` and is not its
author (superusers included), nor an account its author created or gave rights to
(staff, superuser, permissions, groups; and theirs in turn: ``roles.services.accounts``):
two people are two people. Rejecting needs the permission too, except that an author
may withdraw their own draft. Every step is audited (``common.data_changed``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from acode.errors import AcodeError
from roles.models import RoleDraft, RoleDraftStatus
from roles.selectors import role_draft_is_stale
from roles.services.accounts import accounts_made_by
from roles.services.common import actor_label, data_changed
from roles.services.protection import reviewed_write
from roles.services.replay import role_replay
from roles.services.roles import role_reviewed_write

PUBLISH_PERMISSION = "roles.publish_roledraft"


def role_draft_replay_report(draft: RoleDraft) -> dict[str, Any] | None:
    """The open draft replayed against its role's recorded decisions of the last
    ``ACODE_DRAFT_REPLAY_DAYS`` days (``roles.services.replay.role_replay``): what would go
    from allowed to denied and back if it were published. None for a decided draft or a
    role that is gone; a draft that can no longer be built says why under ``error``."""
    if draft.status != RoleDraftStatus.OPEN or draft.role_id is None:
        return None
    days = settings.ACODE_DRAFT_REPLAY_DAYS
    since = timezone.now() - timedelta(days=days)
    try:
        report = role_replay(slug=draft.role_slug, data=draft.content, since=since)
    except AcodeError as exc:
        return {"error": {"code": exc.code, "message": exc.message}, "days": days}
    return {**report, "days": days}


def role_draft_decision_refusal(
    *, draft: RoleDraft, user: AbstractBaseUser, publishing: bool
) -> AcodeError | None:
    """Why ``user`` may not publish (or reject) ``draft``, or None: the one rule admin,
    API and CLI share (admin shows its buttons only when this is None)."""
    if draft.status != RoleDraftStatus.OPEN:
        return AcodeError(
            "ACODE-ROL-013",
            f"Draft #{draft.pk} is {draft.status}, not open; nothing changed.",
            {"draft": draft.pk, "status": draft.status},
        )
    own = draft.author_id == user.pk or draft.author_name == user.get_username()
    if publishing and own:
        return AcodeError(
            "ACODE-ROL-010",
            f"Draft #{draft.pk} is yours: another admin must publish it.",
            {"draft": draft.pk, "author": draft.author_name},
        )
    if publishing and draft.author_id is not None and user.pk in accounts_made_by(draft.author_id):
        return AcodeError(
            "ACODE-ROL-010",
            f"Draft #{draft.pk} is by {draft.author_name}, who created your account or gave it "
            "its rights: another person must publish it.",
            {"draft": draft.pk, "author": draft.author_name, "made_by_author": True},
        )
    if not own and not user.has_perm(PUBLISH_PERMISSION):  # type: ignore[attr-defined]
        verb = "Publishing" if publishing else "Rejecting"
        return AcodeError(
            "ACODE-ROL-011",
            f"{verb} a role draft needs the {PUBLISH_PERMISSION} permission.",
            {"draft": draft.pk, "permission": PUBLISH_PERMISSION},
        )
    return None


def role_draft_publish(*, draft_id: int, user: AbstractBaseUser, reason: str = "") -> RoleDraft:
    """Apply an open draft to its role (a new role version), as ``user``; see the module."""
    with transaction.atomic():
        draft = _locked(draft_id)
        refusal = role_draft_decision_refusal(draft=draft, user=user, publishing=True)
        if refusal is None and role_draft_is_stale(draft):
            refusal = AcodeError(
                "ACODE-ROL-012",
                f"Draft #{draft.pk} was made on {draft.role_slug} v{draft.base_number}, "
                "which is no longer the role's current version; nothing changed.",
                {"draft": draft.pk, "base_version": draft.base_number},
            )
        if refusal is not None:
            raise refusal
        with reviewed_write():  # may widen protected roles (this role, those below it)
            role_reviewed_write(content=draft.content, user=user)
        _decided(draft, RoleDraftStatus.PUBLISHED, user=user, reason=reason)
        RoleDraft.objects.filter(role_slug=draft.role_slug, status=RoleDraftStatus.OPEN).exclude(
            pk=draft.pk
        ).update(status=RoleDraftStatus.SUPERSEDED)
    return draft


@transaction.atomic
def role_draft_reject(*, draft_id: int, user: AbstractBaseUser, reason: str = "") -> RoleDraft:
    """Close an open draft without applying it; nothing live changes."""
    draft = _locked(draft_id)
    refusal = role_draft_decision_refusal(draft=draft, user=user, publishing=False)
    if refusal is not None:
        raise refusal
    _decided(draft, RoleDraftStatus.REJECTED, user=user, reason=reason)
    return draft


def _locked(draft_id: int) -> RoleDraft:
    draft = RoleDraft.objects.select_for_update().filter(pk=draft_id).first()
    if draft is None:
        raise AcodeError("ACODE-API-404", f"No role draft #{draft_id}.", {"draft": draft_id})
    return draft


def _decided(draft: RoleDraft, status: str, *, user: AbstractBaseUser, reason: str) -> None:
    draft.status = status
    draft.decided_by_id = user.pk
    draft.decided_by_name = actor_label(None, user)
    draft.decided_at = timezone.now()
    draft.reason = reason
    draft.save(update_fields=["status", "decided_by", "decided_by_name", "decided_at", "reason"])
    data_changed(
        "role draft",
        status,
        f"{draft.role_slug} #{draft.pk}",
        draft.decided_by_name,
        {"draft": draft.pk, "role": draft.role_slug, "author": draft.author_name,
         "base_version": draft.base_number, "reason": reason},
        live=False,
    )  # fmt: skip
