"""Sessions, their append-only role history and pending changes."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models

from audit.appendonly import AppendOnlyModel
from roles.models import Role, RoleVersion


class RiskTier(models.TextChoices):
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"


class SessionStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    PAUSED = "paused", "Paused"
    COMPLETED = "completed", "Completed"
    ARCHIVED = "archived", "Archived"


# What a session's status may be set to; it is archived and restored only by those actions,
# which free its files and bring them back (services.archive).
SETTABLE_STATUSES = [c for c in SessionStatus.choices if c[0] != SessionStatus.ARCHIVED]


class StepStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    IN_PROGRESS = "in_progress", "In progress"
    DONE = "done", "Done"
    BLOCKED = "blocked", "Blocked"
    SKIPPED = "skipped", "Skipped"
    FAILED = "failed", "Failed"


# The head of a session's audit chain, kept on the session's own row: whoever locks the
# session to change it already holds the chain. Written only by sessions_app.services.audit.SessionHead.
AUDIT_HEAD_FIELDS = ("audit_seq", "audit_hash", "audit_anchored_seq")


class AgentSession(models.Model):
    """Where a role is in force: one task, one workspace, one current role."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    title = models.CharField(max_length=200)
    task = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="agent_sessions"
    )
    workspace = models.CharField(max_length=1000)
    workspace_managed = models.BooleanField(
        default=True, help_text="acode created the workspace (else: an existing path was given)."
    )
    repository = models.ForeignKey(
        "sessions_app.Repository",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="sessions",
    )
    branch = models.CharField(max_length=200, blank=True, help_text="The session's git branch.")
    base_commit = models.CharField(
        max_length=64, blank=True, help_text="The commit the session's branch started from."
    )
    current_role = models.ForeignKey(Role, on_delete=models.PROTECT, related_name="+")
    role_version = models.ForeignKey(
        RoleVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    role_since = models.DateTimeField()
    last_reason = models.TextField(blank=True)
    transition_count = models.PositiveIntegerField(
        default=0,
        help_text="Entries in the history; the next transition's sequence number minus one.",
    )
    plan = models.JSONField(default=list, blank=True)
    risk_tier = models.CharField(max_length=10, choices=RiskTier.choices, default=RiskTier.LOW)
    status = models.CharField(
        max_length=20, choices=SessionStatus.choices, default=SessionStatus.ACTIVE
    )
    active_run = models.ForeignKey(
        "sessions_app.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The run in progress: while set, only that run changes the session's role.",
    )
    audit_seq = models.PositiveBigIntegerField(
        default=0, editable=False, help_text="The newest event of the session's audit chain."
    )
    audit_hash = models.CharField(
        max_length=64, default="0" * 64, editable=False, help_text="That event's hash."
    )
    audit_anchored_seq = models.PositiveBigIntegerField(
        default=0, editable=False, help_text="The last event of the chain an anchor has sealed."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        permissions = [
            ("view_all_sessions", "Can see every session (team lead)"),
            ("act_on_all_sessions", "Can change roles and plans of any session (team lead)"),
            (
                "attach_workspace",
                "Can start a session on an existing server directory under an allowed root",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "current_role"]),
            # The session list's order, for everyone and per owner; each board column's.
            models.Index(fields=["-created_at"], name="session_created_idx"),
            models.Index(fields=["owner", "-created_at"], name="session_owner_created_idx"),
            models.Index(fields=["current_role", "-role_since"], name="session_role_since_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.id})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save; an update writes the audit head only when asked by name, so an instance
        read before an audited write never rewinds the chain when it is saved."""
        if not self._state.adding and kwargs.get("update_fields") is None:
            kwargs["update_fields"] = [
                f.name
                for f in self._meta.concrete_fields
                if not f.primary_key and f.name not in AUDIT_HEAD_FIELDS
            ]
        super().save(*args, **kwargs)

    @property
    def log_keys(self) -> dict[str, str]:
        """What its log lines say of it: the session and its current role (spec FR-070)."""
        return {"session": str(self.pk), "role": self.current_role.name}


class RoleTransition(AppendOnlyModel):
    """One change of role in a session; the first entry is the initial Default."""

    session = models.ForeignKey(AgentSession, on_delete=models.PROTECT, related_name="transitions")
    seq = models.PositiveIntegerField()
    from_role = models.ForeignKey(
        Role, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    to_role = models.ForeignKey(Role, on_delete=models.PROTECT, related_name="+")
    role_version = models.ForeignKey(
        RoleVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    reason = models.TextField()
    actor = models.CharField(max_length=150)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    request_id = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["session_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="unique_transition_seq")
        ]

    def __str__(self) -> str:
        return f"{self.session_id} #{self.seq}: {self.from_role_id} → {self.to_role_id}"


class ChangeKind(models.TextChoices):
    CREATED = "created", "Created"
    MODIFIED = "modified", "Modified"
    DELETED = "deleted", "Deleted"


class PendingChange(models.Model):
    """A file change made in the session and not yet approved by a review."""

    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="pending_changes"
    )
    path = models.CharField(max_length=1000)
    kind = models.CharField(max_length=10, choices=ChangeKind.choices)
    diff = models.TextField(blank=True)
    # NULL (the file did not exist) differs from "" (it existed, empty).
    baseline = models.TextField(  # noqa: DJ001
        null=True,
        blank=True,
        help_text="File content before this review cycle (null: did not exist).",
    )
    # Exactly what was written: the git blob id of the content now at ``path`` ("" when
    # deleted) and its git mode. Approval commits these, never what the work tree holds.
    content = models.CharField(max_length=64, blank=True, default="")
    mode = models.PositiveIntegerField(default=0)
    # The same of the file before this review cycle: a change back to exactly these (content
    # and mode, not only the text) is a revert.
    baseline_content = models.CharField(max_length=64, blank=True, default="")
    baseline_mode = models.PositiveIntegerField(default=0)
    content_recorded = models.BooleanField(
        default=False,
        help_text="Written by a tool (content above); false for a change described by hand, "
        "which approval does not commit.",
    )
    role = models.ForeignKey(Role, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["session_id", "path"]
        constraints = [
            models.UniqueConstraint(fields=["session", "path"], name="unique_pending_change_path")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.path}"


class IdempotencyRecord(models.Model):
    """The first response to a POST carrying an ``Idempotency-Key``, replayed on retries."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    fingerprint = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    body = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="unique_idempotency_key")
        ]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.key}"


class WorkspaceApply(models.Model):
    """A command's changes being put into the workspace: recorded (as pending changes) in
    the same transaction as this row, which is deleted once every file is in place. A row
    left behind (a worker died half way) is finished by the next attempt
    (``services.applies.workspace_apply_resume``), so the workspace always ends up holding
    what the pending changes say."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="applies")
    plan = models.JSONField(help_text="The staging directory and the moves left to make.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"apply {self.pk} in {self.session_id}"
