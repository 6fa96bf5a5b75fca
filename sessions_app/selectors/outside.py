"""Reads of outside agents' hook tokens."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet

from sessions_app.models import HookToken


def hook_tokens_of(user: User) -> QuerySet[HookToken]:
    """``user``'s hook tokens, newest first, with the role each starts sessions in."""
    return HookToken.objects.filter(user=user).select_related("role")
