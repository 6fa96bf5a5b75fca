"""Hook tokens: what an outside agent's hooks authenticate with, for one user, hooks only."""

from __future__ import annotations

import hashlib
import secrets
import time
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Exists, QuerySet

from acode.errors import AcodeError
from roles.registry import registry
from sessions_app.models import HookToken

KEY_PREFIX = "acodehk_"


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@transaction.atomic
def hook_token_create(*, user: User, label: str = "", role: str = "") -> tuple[HookToken, str]:
    """A new hook token of ``user`` (starting new sessions in ``role``, else the default
    role) and its key, shown only now."""
    role_id = registry.get(role).id if role else None  # ACODE-ROL-001 for an unknown role
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    token = HookToken.objects.create(
        user=user, label=label, role_id=role_id, key_hash=_digest(key), prefix=key[:14]
    )
    return token, key


def hook_token_revoke(*, user: User, token_id: str) -> None:
    """Delete one of ``user``'s hook tokens (ACODE-HOK-002 when they have none by that id)."""
    deleted, _ = HookToken.objects.filter(pk=token_id, user=user).delete()
    if not deleted:
        raise AcodeError(
            "ACODE-HOK-002", "No hook token of yours has this id.", {"id": str(token_id)}
        )


def _live(key_hash: str) -> QuerySet[HookToken]:
    """The one rule of a live token: its digest is on record and its user is active."""
    return HookToken.objects.filter(key_hash=key_hash, user__is_active=True)


# The tokens this process has seen, by digest, with when: an agent posts every tool call
# with the same token, so the event's own query checks it is still live
# (``hook_token_live_column``) instead of a query of its own; kept this long, so a renamed
# user's name is read again.
_seen: dict[str, tuple[float, HookToken]] = {}
SEEN_SECONDS = 60.0
SEEN_KEPT = 10_000


def hook_token_user(key: str) -> HookToken | None:
    """The live token ``key`` is (with its active user), or None: read now, unless this
    process saw it live in the last ``SEEN_SECONDS``; then the caller must check it is
    still live in its own query (``hook_token_live_column``) before it acts for it."""
    if not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    digest = _digest(key)
    seen = _seen.get(digest)
    if seen is not None and time.monotonic() - seen[0] < SEEN_SECONDS:
        return seen[1]
    try:  # the digest is unique: no ordering, no LIMIT 1 to build
        token = _live(digest).select_related("user").get()
    except HookToken.DoesNotExist:
        return None
    if len(_seen) >= SEEN_KEPT:
        _seen.clear()
    _seen[digest] = (time.monotonic(), token)
    return token


def hook_token_live_column(*, token_id: Any, key_hash: str) -> Exists:
    """Whether a token (its id and digest) is still live, as a column of the query that
    acts for it."""
    return Exists(_live(key_hash).filter(pk=token_id))


def hook_token_refused(token: HookToken) -> AcodeError:
    """The error for a token found no longer live (revoked, its user deactivated); this
    process forgets it."""
    _seen.pop(token.key_hash, None)
    return AcodeError("ACODE-API-401", "Invalid or revoked hook token.", {})


def hook_token_fresh(token: HookToken) -> HookToken:
    """``token`` read again, live (``hook_token_refused`` if it is not)."""
    try:
        return _live(token.key_hash).select_related("user").get(pk=token.pk)
    except HookToken.DoesNotExist:
        raise hook_token_refused(token) from None


def is_hook_token(value: object) -> bool:
    """Whether a request was authenticated by a hook token (not a login or an API token)."""
    return isinstance(value, HookToken)


def hook_token_of(auth: object) -> HookToken:
    """The hook token a request was authenticated by (ACODE-API-401 for anything else)."""
    if not isinstance(auth, HookToken):
        raise AcodeError("ACODE-API-401", "Hook endpoints take a hook token only.", {})
    return auth
