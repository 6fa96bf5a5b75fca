"""A backlog that feeds runs: projects, their epics and tasks.

A project is a board: its tasks (grouped in epics) wait in the backlog until the
scheduler (``services.backlog_scheduler``) starts each as a run in a session of its own,
then follow that run (review, done, blocked) and, once approved, are merged into the
project's integration branch (``services.backlog_integration``). The allowed status
changes are data (``states.TASK``); every write goes through ``services.backlog``.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from sessions_app.models.jobs import Job
from sessions_app.models.repositories import Repository
from sessions_app.models.runs import Run
from sessions_app.models.sessions import AgentSession, RiskTier


class PmWork(models.TextChoices):
    PLAN = "plan", "Plan (a spec into epics and tasks)"
    CHECK = "check", "Completeness check"


class BacklogProject(models.Model):
    """A board of epics and tasks, with how many of its runs may go at once."""

    slug = models.SlugField(max_length=64, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True, help_text="The product spec, as given.")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Its runs are started as this user; they see and act on its board.",
    )
    repository = models.ForeignKey(
        Repository,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Each task's session clones it (empty: each starts an empty repository).",
    )
    max_concurrent_runs = models.PositiveSmallIntegerField(
        default=2, help_text="Runs of this project's tasks going at once (0: the scheduler waits)."
    )
    run_risk = models.CharField(
        max_length=10,
        choices=RiskTier.choices,
        default=RiskTier.MEDIUM,
        help_text="The risk each task's run declares (signals may raise it).",
    )
    max_task_attempts = models.PositiveSmallIntegerField(
        default=2,
        help_text="Runs a task gets: a blocked run before this many is reassigned (the task "
        "goes back to the backlog, started again with the reassign template); then it stays "
        "blocked for a person.",
    )
    reassign_template = models.SlugField(
        max_length=64,
        blank=True,
        help_text="Workflow template of a reassigned attempt (e.g. stages routed to another "
        "model endpoint); empty: the tier's template again.",
    )
    integration_branch = models.CharField(max_length=200, default="acode/integration")
    integration_pushed = models.TextField(
        blank=True,
        help_text="The last push of the integration branch to the repository's remote (when "
        "the repository is pushable): where, and what git said.",
    )
    auto_accept_proposals = models.BooleanField(
        default=False,
        help_text="Tasks the Product Manager proposes go straight to the backlog (else a "
        "person accepts each).",
    )
    # The Product Manager (``services.backlog_pm``): its plans and completeness checks are
    # jobs in one session of the project's, in the product-manager role.
    pm_session = models.OneToOneField(
        AgentSession,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The Product Manager's session: its propose_backlog calls propose to this "
        "project.",
    )
    pm_job = models.ForeignKey(
        Job,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The Product Manager's latest job (a plan or a completeness check).",
    )
    pm_job_kind = models.CharField(max_length=10, choices=PmWork.choices, blank=True)
    pm_job_open = models.BooleanField(
        default=False, help_text="Its end not yet shown on the kanban (the scheduler's tick)."
    )
    checked_through = models.PositiveIntegerField(
        default=0,
        help_text="The newest done task (id) the last completeness check saw: the next check "
        "waits until a newer one is done and nothing is open.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.title


class Epic(models.Model):
    """A major feature of a project: a group of tasks."""

    project = models.ForeignKey(BacklogProject, on_delete=models.CASCADE, related_name="epics")
    key = models.SlugField(max_length=64)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "id"]
        constraints = [models.UniqueConstraint(fields=["project", "key"], name="unique_epic_key")]

    def __str__(self) -> str:
        return self.title


class TaskStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed (waits for a person to accept it)"
    BACKLOG = "backlog", "Backlog"
    IN_PROGRESS = "in_progress", "In progress"
    REVIEW = "review", "Review"
    DONE = "done", "Done"
    BLOCKED = "blocked", "Blocked"
    REJECTED = "rejected", "Rejected (a person turned the proposal down)"


class TaskPriority(models.TextChoices):
    HIGH = "high", "High"
    MEDIUM = "medium", "Medium"
    LOW = "low", "Low"


PRIORITY_RANK = {TaskPriority.HIGH: 0, TaskPriority.MEDIUM: 1, TaskPriority.LOW: 2}


class BacklogTask(models.Model):
    """A unit of work small enough for one run, with what makes it done."""

    project = models.ForeignKey(BacklogProject, on_delete=models.CASCADE, related_name="tasks")
    epic = models.ForeignKey(
        Epic, null=True, blank=True, on_delete=models.SET_NULL, related_name="tasks"
    )
    key = models.SlugField(max_length=64, help_text="Unique in the project; dependencies name it.")
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    acceptance_criteria = models.JSONField(default=list, blank=True)
    priority = models.CharField(
        max_length=10, choices=TaskPriority.choices, default=TaskPriority.MEDIUM
    )
    depends_on = models.ManyToManyField(
        "self", symmetrical=False, blank=True, related_name="dependents"
    )
    template = models.SlugField(
        max_length=64,
        blank=True,
        help_text="Workflow template of its runs (empty: the one for the run's risk tier).",
    )
    status = models.CharField(
        max_length=20, choices=TaskStatus.choices, default=TaskStatus.BACKLOG, db_index=True
    )
    reason = models.TextField(
        blank=True,
        help_text="Why it is blocked, the merge conflict that sent it back, or why a person "
        "rejected the proposal.",
    )
    waiting = models.CharField(
        max_length=300,
        blank=True,
        help_text="Why the scheduler leaves this ready task waiting (the project's room, a "
        "full worker queue); empty once it starts.",
    )
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="Runs started for it; the scheduler's claim compares and sets it."
    )
    blocked_runs = models.PositiveSmallIntegerField(
        default=0, help_text="Its runs that ended blocked since a person last unblocked it."
    )
    conflict = models.JSONField(
        default=list, blank=True, help_text="Paths that conflicted merging it (integration)."
    )
    session = models.ForeignKey(
        AgentSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="backlog_tasks"
    )
    merged_commit = models.CharField(max_length=64, blank=True)
    proposed_by = models.CharField(max_length=150, blank=True)
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "key"], name="unique_task_key"),
            # One run carries one task: a run is never shared by two tasks.
            models.UniqueConstraint(fields=["run"], name="unique_task_run"),
        ]

    def __str__(self) -> str:
        return f"{self.key}: {self.title} ({self.status})"
