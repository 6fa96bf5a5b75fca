"""Reads of outside agents' hook tokens and sessions."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet

from sessions_app.models import HookToken, OutsideSession


def hook_tokens_of(user: User) -> QuerySet[HookToken]:
    """``user``'s hook tokens, newest first, with the role each starts sessions in."""
    return HookToken.objects.filter(user=user).select_related("role")


def outside_of(session_ids: list[object]) -> dict[str, str]:
    """Which of these sessions are an outside agent's: session id -> the agent's kind."""
    rows = OutsideSession.objects.filter(session_id__in=session_ids).values_list(
        "session_id", "agent"
    )
    return {str(pk): agent for pk, agent in rows}
