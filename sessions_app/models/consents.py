"""A tool call put to a person: a rule said it runs only once someone consents."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from sessions_app.models.jobs import Job
from sessions_app.models.sessions import AgentSession


class ConsentStatus(models.TextChoices):
    PENDING = "pending", "Waiting for an answer"
    ALLOWED = "allowed", "Allowed"
    DENIED = "denied", "Denied"
    TIMED_OUT = "timed_out", "Denied: no answer in time"
    CANCELLED = "cancelled", "Cancelled with its job"


class ToolConsent(models.Model):
    """One call that waits for a person's answer (``sessions_app.services.consents``).

    What is shown is what the audit shows (redacted): the tool, its target, the rule that
    asked and the normalised arguments. The job's loop waits for the answer until
    ``expires_at``; then the call is denied."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="tool_consents"
    )
    job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="tool_consents"
    )
    role_slug = models.CharField(max_length=100)
    tool = models.CharField(max_length=200)
    target = models.TextField(blank=True)
    rule = models.CharField(max_length=300)
    reason = models.TextField(blank=True)
    arguments = models.JSONField(default=dict, help_text="The normalised arguments, redacted.")
    status = models.CharField(
        max_length=20, choices=ConsentStatus.choices, default=ConsentStatus.PENDING, db_index=True
    )
    asked_audit_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    answered_by_name = models.CharField(max_length=150, blank=True)
    note = models.TextField(blank=True)
    remembered = models.ForeignKey(
        "sessions_app.RememberedAnswer",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reuses",
        help_text="Answered by a remembered answer instead of a person now (issue 41).",
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["session", "status"], name="consent_session_status")]

    def __str__(self) -> str:
        return f"consent {self.id} {self.tool} ({self.status})"


class RememberedAnswer(models.Model):
    """A person's answer to an ask or a question, kept with its scope and reused (decision
    memory).

    Scope: the session, the role that asked and the exact call (``key``: a hash of the
    tool, its target, the rule and the normalised arguments) or question (``tool`` empty,
    ``key`` a hash of its text). The same asked again in that scope is answered with it,
    shown as "answered before by ..."; an admin revokes it
    (``sessions_app.services.memory``), and the next ask goes to a person again."""

    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="remembered_answers"
    )
    role_slug = models.CharField(max_length=100)
    key = models.CharField(max_length=64)
    tool = models.CharField(max_length=200)
    target = models.TextField(blank=True)
    rule = models.CharField(max_length=300, blank=True)
    allowed = models.BooleanField(null=True, help_text="An ask's answer; empty for a question.")
    question = models.TextField(blank=True, help_text="A question's text (ask_human).")
    note = models.TextField(blank=True, help_text="The note to an ask, or a question's answer.")
    source = models.ForeignKey(ToolConsent, null=True, on_delete=models.SET_NULL, related_name="+")
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    answered_by_name = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by_name = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["-created_at"]
        permissions = [("revoke_rememberedanswer", "May revoke remembered answers")]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "role_slug", "key"],
                condition=models.Q(revoked_at__isnull=True),
                name="one_live_remembered_answer",
            )
        ]

    def __str__(self) -> str:
        if not self.tool:
            return f"{self.question[:60]} answered by {self.answered_by_name}"
        verdict = "allowed" if self.allowed else "denied"
        return f"{self.tool} {self.target} {verdict} by {self.answered_by_name}".strip()
