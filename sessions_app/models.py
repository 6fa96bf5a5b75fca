"""Sessions, their append-only role history, pending changes and the tamper-evident audit log."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models

from acode.errors import AcodeError
from roles.models import Role, RoleVersion


class AppendOnlyQuerySet(models.QuerySet):
    """Bulk updates and deletes are refused: history is written once."""

    def update(self, **kwargs: Any) -> int:
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")


class AppendOnlyError(AcodeError):
    """Someone tried to change or remove a history row."""

    def __init__(self, message: str) -> None:
        super().__init__("ACODE-AUD-001", message, {})


class AppendOnlyModel(models.Model):
    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError(f"{type(self).__name__} rows are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise AppendOnlyError(f"{type(self).__name__} rows are append-only")


class RiskTier(models.TextChoices):
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"


class SessionStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    PAUSED = "paused", "Paused"
    COMPLETED = "completed", "Completed"
    ARCHIVED = "archived", "Archived"


class StepStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    IN_PROGRESS = "in_progress", "In progress"
    DONE = "done", "Done"
    BLOCKED = "blocked", "Blocked"
    SKIPPED = "skipped", "Skipped"


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
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        permissions = [
            ("view_all_sessions", "Can see every session (team lead)"),
            ("act_on_all_sessions", "Can change roles and plans of any session (team lead)"),
        ]
        indexes = [models.Index(fields=["status", "current_role"])]

    def __str__(self) -> str:
        return f"{self.title} ({self.id})"


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


class AuditEventType(models.TextChoices):
    """The documented list of audit event types."""

    SESSION_CREATED = "SessionCreated", "Session created"
    SESSION_UPDATED = "SessionUpdated", "Session details changed"
    ROLE_TRANSITION = "RoleTransition", "Role changed"
    TRANSITION_DENIED = "TransitionDenied", "Role change refused"
    ROLE_ACTION = "RoleAction", "Tool call executed in a role"
    TOOL_DENIED = "ToolDenied", "Tool call refused in a role"
    PLAN_UPDATED = "PlanUpdated", "Plan set or a step's status changed"
    CHANGE_RECORDED = "ChangeRecorded", "Pending file change recorded"
    CHANGES_APPROVED = "ChangesApproved", "Pending changes approved and cleared"
    ROLE_EDITED = "RoleEdited", "Role definition changed (new role version)"
    PROMPT_REJECTED = "PromptRejected", "Dangerous prompt text refused"
    JOB_EVENT = "JobEvent", "Inference job lifecycle"


class AuditEvent(AppendOnlyModel):
    """One audited fact. ``hash`` chains it to the previous event, so edits are detectable."""

    seq = models.PositiveBigIntegerField(unique=True)
    event_type = models.CharField(max_length=40, choices=AuditEventType.choices, db_index=True)
    session = models.ForeignKey(
        AgentSession, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events"
    )
    role = models.CharField(max_length=64, blank=True, db_index=True)
    actor = models.CharField(max_length=150, db_index=True)
    target = models.CharField(max_length=1000, blank=True)
    result = models.CharField(max_length=200, blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(db_index=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["seq"]

    def __str__(self) -> str:
        return f"#{self.seq} {self.event_type} {self.target}"


class AuditHead(models.Model):
    """The end of the audit chain; locked while an event is appended so the chain stays linear."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    last_seq = models.PositiveBigIntegerField(default=0)
    last_hash = models.CharField(max_length=64, default="0" * 64)

    def __str__(self) -> str:
        return f"audit head #{self.last_seq}"


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


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    LIMIT_EXCEEDED = "limit_exceeded", "Limit exceeded"


FINAL_JOB_STATUSES = (
    JobStatus.SUCCEEDED,
    JobStatus.FAILED,
    JobStatus.CANCELLED,
    JobStatus.LIMIT_EXCEEDED,
)


class Job(models.Model):
    """One role-scoped inference run in a session, executed by a Celery worker."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(AgentSession, on_delete=models.PROTECT, related_name="jobs")
    role = models.ForeignKey(Role, on_delete=models.PROTECT, related_name="+")
    role_version = models.ForeignKey(
        RoleVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    request = models.TextField()
    status = models.CharField(
        max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True
    )
    provider = models.CharField(max_length=20, blank=True, help_text="openai or scripted")
    model = models.CharField(max_length=200, blank=True)
    endpoint = models.CharField(max_length=500, blank=True)
    fallback_used = models.BooleanField(default=False)
    llm_calls = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    result = models.TextField(blank=True)
    error_code = models.CharField(max_length=40, blank=True)
    error_message = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"job {self.id} ({self.status})"

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_JOB_STATUSES


class JobEventKind(models.TextChoices):
    STATUS = "status", "Status changed"
    PROMPT = "prompt_composed", "Prompt composed"
    CONTEXT = "context_built", "Context built"
    LLM_REQUEST = "llm_request", "LLM request"
    LLM_RESPONSE = "llm_response", "LLM response"
    TOOL_CALL = "tool_call", "Tool call"
    TOOL_RESULT = "tool_result", "Tool result"
    TOOL_DENIED = "tool_denied", "Tool denied"
    LIMIT = "limit_hit", "Limit hit"
    NOTE = "note", "Note"


class JobEvent(models.Model):
    """One step of a job, in order; persisted and pushed live to the session's group."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=30, choices=JobEventKind.choices)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["job", "seq"], name="unique_job_event_seq")]

    def __str__(self) -> str:
        return f"{self.job_id} #{self.seq} {self.kind}"
