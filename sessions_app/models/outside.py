"""Agents acode does not run itself (Claude Code, Codex...) whose hooks ask acode's roles:
their hook tokens and the acode session each of their sessions is."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from roles.models import Role
from sessions_app.models.sessions import AgentSession


class AgentKind(models.TextChoices):
    CLAUDE_CODE = "claude-code", "Claude Code"
    CODEX = "codex", "Codex"
    OTHER = "other", "Other agent"


class HookToken(models.Model):
    """A secret an outside agent's hooks send (``Authorization: Bearer``): it acts for its
    user on the hook endpoints only (the rest of the API does not accept it). Only its
    SHA-256 is kept; ``role`` is the role a new session starts in (empty: the default)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="hook_tokens"
    )
    label = models.CharField(max_length=100, blank=True)
    role = models.ForeignKey(
        Role, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(
        max_length=16, help_text="The key's first characters, to tell keys apart."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user_id})"


class OutsideSession(models.Model):
    """An outside agent's session, as the acode session it is (created by its first event)."""

    session = models.OneToOneField(
        AgentSession, primary_key=True, on_delete=models.CASCADE, related_name="outside"
    )
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    agent = models.CharField(max_length=40, choices=AgentKind.choices)
    agent_session_id = models.CharField(max_length=200)
    machine = models.CharField(max_length=200, blank=True)
    cwd = models.CharField(max_length=1000)
    repository = models.CharField(max_length=500, blank=True)
    token = models.ForeignKey(
        HookToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "agent", "agent_session_id"], name="unique_outside_session"
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent} {self.agent_session_id}"
