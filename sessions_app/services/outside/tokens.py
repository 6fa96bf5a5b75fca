"""Hook tokens: what an outside agent's hooks authenticate with, for one user, hooks only."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import User
from django.db import transaction

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


def hook_token_user(key: str) -> HookToken | None:
    """The live token ``key`` is (with its active user), or None."""
    if not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    try:  # the digest is unique: no ordering, no LIMIT 1 to build
        token = HookToken.objects.select_related("user").get(key_hash=_digest(key))
    except HookToken.DoesNotExist:
        return None
    return token if token.user.is_active else None


def is_hook_token(value: object) -> bool:
    """Whether a request was authenticated by a hook token (not a login or an API token)."""
    return isinstance(value, HookToken)


def hook_token_of(auth: object) -> HookToken:
    """The hook token a request was authenticated by (ACODE-API-401 for anything else)."""
    if not isinstance(auth, HookToken):
        raise AcodeError("ACODE-API-401", "Hook endpoints take a hook token only.", {})
    return auth
