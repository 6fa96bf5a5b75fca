"""Orchestrated runs: workflow templates, risk signals, runs and what happened in them.

A run executes a workflow template in a session: an ordered list of stages, each a role
(Planner, Explorer, Coder, Tester, Reviewer) or the approval gate. Every stage is one or
more jobs; every role change goes through the one transition service. The run's state
lives here, so a worker that dies loses nothing.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from roles.models import Role
from sessions_app.models.sessions import AgentSession, RiskTier

TIER_ORDER = {RiskTier.LOW: 0, RiskTier.MEDIUM: 1, RiskTier.HIGH: 2}


class StagePurpose(models.TextChoices):
    PLAN = "plan", "Plan (the answer becomes the session plan)"
    EXPLORE = "explore", "Explore (findings go to later stages)"
    CODE = "code", "Code (one job per plan step)"
    TEST = "test", "Test (the result is evidence for the review)"
    REVIEW = "review", "Review (a verdict: approve or request changes)"
    APPROVAL = "approval", "Approval gate (a person approves)"


class WorkflowTemplate(models.Model):
    """An ordered list of stages a run goes through, with the run's bounds and budgets."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    risk_tier = models.CharField(
        max_length=10,
        choices=RiskTier.choices,
        help_text="Runs whose effective risk is this tier use this template (the first "
        "enabled one by name).",
    )
    enabled = models.BooleanField(default=True)
    max_revisions_per_step = models.PositiveSmallIntegerField(
        default=2, help_text="Requested changes sent back to the Coder for one plan step."
    )
    max_revisions_per_run = models.PositiveSmallIntegerField(
        default=6, help_text="Requested changes sent back to the Coder in the whole run."
    )
    max_test_attempts = models.PositiveSmallIntegerField(
        default=3,
        help_text="Attempts the Coder gets at a plan step while its tests fail (each time "
        "with the failing output); then the step is blocked and a person decides. 0: failing "
        "tests go on to the review.",
    )
    max_llm_calls = models.PositiveIntegerField(default=200, help_text="Across all stages.")
    max_tokens = models.PositiveIntegerField(default=2_000_000, help_text="Across all stages.")
    max_seconds = models.PositiveIntegerField(
        default=7200, help_text="Wall time from start to the end of the last stage."
    )
    approval_ttl_minutes = models.PositiveIntegerField(
        default=1440, help_text="How long a requested approval stays valid."
    )
    final_review = models.BooleanField(
        default=False,
        help_text="After the last plan step's review approves, the Reviewer reviews the whole "
        "change once more, with the request and every step's acceptance criteria.",
    )
    require_tests = models.BooleanField(
        null=True,
        blank=True,
        help_text="A run passes only when its tests passed (each plan step's last test "
        "stage). Empty: by the run's tier (ACODE_RUN_REQUIRE_TESTS_TIERS, medium and high).",
    )
    review_model_differs = models.BooleanField(
        default=False,
        help_text="A different engineer reviews: a review stage's model endpoint must differ "
        "from the one the Coder wrote the step with (the review stage's own, else the first "
        "of its role's reassign models that differs). A run refuses to start without one "
        "(ACODE-RUN-013).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class WorkflowStage(models.Model):
    """One stage of a template: a role with its own budget, or the approval gate."""

    template = models.ForeignKey(WorkflowTemplate, on_delete=models.CASCADE, related_name="stages")
    position = models.PositiveSmallIntegerField()
    purpose = models.CharField(max_length=10, choices=StagePurpose.choices)
    role = models.ForeignKey(
        Role,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Empty only for the approval gate.",
    )
    max_llm_calls = models.PositiveIntegerField(default=0, help_text="0: the role's own limit.")
    max_tokens = models.PositiveIntegerField(default=0, help_text="0: the role's own limit.")
    timeout_seconds = models.PositiveIntegerField(default=0, help_text="0: the role's own limit.")
    model = models.CharField(
        max_length=100,
        blank=True,
        help_text="Model endpoint for this stage's jobs (empty: the role's). A review routed "
        "to a different endpoint than the Coder's is 'a different engineer reviews'.",
    )
    commands = models.JSONField(
        default=list,
        blank=True,
        help_text="Test stages only: commands, each a JSON list of arguments such as "
        '["python", "manage.py", "migrate", "--check"], that the stage\'s job runs in order '
        "without a model, stopping at the first that does not pass; its role's command rules "
        "still decide each one. Seed 002's host-validation lane: give the stage a role whose "
        "queue only the workers on hosts with the services consume.",
    )

    class Meta:
        ordering = ["template_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["template", "position"], name="unique_stage_position")
        ]

    def __str__(self) -> str:
        who = self.role.name if self.role is not None else "approval"
        return f"{self.template.slug} #{self.position} {self.purpose} ({who})"


class SignalKind(models.TextChoices):
    REQUEST_KEYWORD = "request_keyword", "A word in the request"
    PATH_GLOB = "path_glob", "A path the plan names or the changes touch"
    PLAN_STEPS = "plan_steps", "The plan has at least N steps"
    FAILED_RUNS = "failed_runs", "The session had at least N failed or blocked runs"
    UNATTENDED = "unattended", "Autonomy: the run's template commits without a person approving"


class RiskSignal(models.Model):
    """Something about a request, its plan or its changes that raises the run's risk tier."""

    name = models.SlugField(max_length=64, unique=True)
    description = models.CharField(max_length=255, blank=True)
    kind = models.CharField(max_length=20, choices=SignalKind.choices)
    patterns = models.JSONField(
        default=list,
        blank=True,
        help_text="Keywords (whole words, any case) or path globs, by kind.",
    )
    threshold = models.PositiveIntegerField(default=0, help_text="N, for counting kinds.")
    tier = models.CharField(
        max_length=10,
        choices=RiskTier.choices,
        help_text="The run's tier is at least this when the signal fires.",
    )
    score = models.PositiveSmallIntegerField(
        default=0,
        help_text="Points a firing adds to the run's risk score: the declared tier's points "
        "(low 0, medium 3, high 6) plus every fired signal's; 3 or more is medium, 6 high.",
    )
    sensitive = models.BooleanField(
        default=False,
        help_text="A sensitive tag or path: when it fires, a medium-risk run needs approval too.",
    )
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} → {self.tier}"


class RunStatus(models.TextChoices):
    RUNNING = "running", "Running"
    AWAITING_INPUT = "awaiting_input", "Waiting for an answer"
    AWAITING_APPROVAL = "awaiting_approval", "Waiting for approval"
    BLOCKED = "blocked", "Blocked: a person must decide"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    REJECTED = "rejected", "Rejected"
    CANCELLED = "cancelled", "Cancelled"


ACTIVE_RUN_STATUSES = (
    RunStatus.RUNNING,
    RunStatus.AWAITING_INPUT,
    RunStatus.AWAITING_APPROVAL,
    RunStatus.BLOCKED,
)
FINAL_RUN_STATUSES = (
    RunStatus.SUCCEEDED,
    RunStatus.FAILED,
    RunStatus.REJECTED,
    RunStatus.CANCELLED,
)


class Run(models.Model):
    """A workflow template executed in a session, stage by stage, as Celery jobs."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(AgentSession, on_delete=models.PROTECT, related_name="runs")
    template = models.ForeignKey(WorkflowTemplate, on_delete=models.PROTECT, related_name="runs")
    request = models.TextField()
    declared_tier = models.CharField(max_length=10, choices=RiskTier.choices)
    effective_tier = models.CharField(max_length=10, choices=RiskTier.choices)
    signals = models.JSONField(
        default=list, blank=True, help_text="Every risk signal that fired, with where."
    )
    risk_score = models.PositiveSmallIntegerField(
        default=0, help_text="The declared tier's points plus every fired signal's score."
    )
    gate_required = models.BooleanField(default=False)
    status = models.CharField(
        max_length=20, choices=RunStatus.choices, default=RunStatus.RUNNING, db_index=True
    )
    revisions = models.PositiveSmallIntegerField(default=0)
    max_llm_calls = models.PositiveIntegerField()
    max_tokens = models.PositiveIntegerField()
    max_seconds = models.PositiveIntegerField()
    cancel_requested = models.BooleanField(default=False)
    error_code = models.CharField(max_length=40, blank=True)
    message = models.TextField(blank=True, help_text="How the run ended, or why it waits.")
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        permissions = [
            ("approve_run", "Can approve or reject a run waiting at the approval gate"),
        ]

    def __str__(self) -> str:
        return f"run {self.id} ({self.status})"

    @property
    def log_keys(self) -> dict[str, str]:
        """What its log lines say of it: its session's (and that session's current role)."""
        return self.session.log_keys

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_RUN_STATUSES


class StageStatus(models.TextChoices):
    RUNNING = "running", "Running"
    AWAITING_INPUT = "awaiting_input", "Waiting for an answer"
    AWAITING_APPROVAL = "awaiting_approval", "Waiting for approval"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class RunStage(models.Model):
    """One stage as it ran: which role, which plan step, which revision, its job and result."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="stages")
    seq = models.PositiveIntegerField()
    position = models.PositiveSmallIntegerField(help_text="The template stage it executes.")
    purpose = models.CharField(max_length=10, choices=StagePurpose.choices)
    role = models.ForeignKey(
        Role, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    plan_step = models.PositiveIntegerField(default=0, help_text="0: not tied to a plan step.")
    revision = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(
        max_length=20, choices=StageStatus.choices, default=StageStatus.RUNNING
    )
    reason = models.TextField(blank=True, help_text="The reason given for entering the role.")
    job = models.ForeignKey(
        "sessions_app.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    verdict = models.JSONField(
        default=dict, blank=True, help_text="A review's verdict, summary and findings."
    )
    evidence = models.JSONField(
        default=dict, blank=True, help_text="What the stage produced: test results, findings."
    )
    progress = models.CharField(
        max_length=64, blank=True, help_text="Digest of the pending changes after a code stage."
    )
    model = models.CharField(
        max_length=200,
        blank=True,
        help_text="The model endpoint the run routed this stage to: a Coder reassigned after "
        "a blocked step, a reviewer other than the author; empty: the stage's or its role's.",
    )
    reasoning_effort = models.CharField(
        max_length=10, blank=True, help_text="The role's reasoning effort its jobs were sent."
    )
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="unique_run_stage_seq")]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.seq} {self.purpose}"


class RunQuestion(models.Model):
    """A question to a person: asked by a stage (``ask_human``) or by a blocked run."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="questions")
    stage = models.ForeignKey(
        RunStage, null=True, blank=True, on_delete=models.CASCADE, related_name="questions"
    )
    asked_by = models.CharField(max_length=150, help_text="The role, or 'orchestrator'.")
    question = models.TextField()
    answer = models.TextField(blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    asked_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "asked_at", "id"]

    def __str__(self) -> str:
        return f"{self.run_id}: {self.question[:60]}"


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    EXPIRED = "expired", "Expired"
    SUPERSEDED = "superseded", "Superseded by a change"


class RunApproval(models.Model):
    """A request for approval, bound to a digest of exactly what is to be approved."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="approvals")
    digest = models.CharField(max_length=64)
    status = models.CharField(
        max_length=12, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["run_id", "requested_at", "id"]

    def __str__(self) -> str:
        return f"{self.run_id} {self.status} {self.digest[:12]}"
