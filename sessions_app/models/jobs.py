"""Role-scoped inference jobs and their events."""

from __future__ import annotations

import uuid

from django.db import models

from roles.models import Role, RoleVersion
from sessions_app.models.sessions import AgentSession


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
    broker_wait_since = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Since when the job waits for the task queue (its message could not be sent).",
    )
    created_by = models.CharField(max_length=150)
    run_stage = models.ForeignKey(
        "sessions_app.RunStage",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="jobs",
        help_text="The run stage this job executes (empty: started by hand).",
    )
    # Caps on top of the role's own limits (a run stage's share of the run's budget).
    limit_llm_calls = models.PositiveIntegerField(null=True, blank=True)
    limit_tokens = models.PositiveIntegerField(null=True, blank=True)
    limit_seconds = models.PositiveIntegerField(null=True, blank=True)
    model_override = models.CharField(
        max_length=100, blank=True, help_text="Model endpoint chosen by the run stage."
    )
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="children",
        help_text="The job that delegated this one (issue 41); empty: started otherwise.",
    )
    resumed_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="resumptions",
        help_text="The job that stopped at a limit and this one continues with a fresh "
        "budget (services.jobs.job_resume); empty: started otherwise.",
    )
    commands = models.JSONField(
        default=list,
        blank=True,
        help_text="Commands (argument lists) the job runs in order instead of asking a model: "
        "a test stage's (WorkflowStage.commands), copied when it started. Empty: a model "
        "decides.",
    )
    collected = models.BooleanField(default=False, help_text="Its parent collected its result.")
    escalation = models.JSONField(
        default=dict,
        blank=True,
        help_text="A sub-agent's block on its way up the chain (issue 41): what blocked it, "
        "where it came from, and where it went (services.delegation).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"job {self.id} ({self.status})"

    @property
    def log_keys(self) -> dict[str, str]:
        """What its log lines say of it: its session and the job's own role."""
        return {"session": str(self.session_id), "role": self.role.name}

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
