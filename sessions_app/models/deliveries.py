"""What a session delivered: each commit approved work became on the session branch, the
files it changed, and whether it was pushed to the repository's remote."""

from __future__ import annotations

from django.db import models

from sessions_app.models.runs import Run
from sessions_app.models.sessions import AgentSession


class PushStatus(models.TextChoices):
    NONE = "none", "Not pushed (the repository is not marked pushable)"
    PENDING = "pending", "Pushing"
    PUSHED = "pushed", "Pushed"
    FAILED = "failed", "Push failed"


class DeliveredCommit(models.Model):
    """A commit approved changes became on ``acode/<session>``; written once, when the
    commit is made, and then only its push outcome changes."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="commits")
    run = models.ForeignKey(
        Run,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="commits",
        help_text="The run whose approval or review committed it (empty: a review by hand).",
    )
    sha = models.CharField(max_length=64, blank=True)
    branch = models.CharField(max_length=200, blank=True)
    committed = models.BooleanField(
        default=True,
        help_text="False: approved in an attached directory, which already held the changes "
        "(applied when made); acode commits only in workspaces it created (no sha, branch).",
    )
    message = models.TextField()
    files = models.JSONField(
        default=list, blank=True, help_text="[{path, kind, added, removed}] the commit changed."
    )
    approved_by = models.CharField(max_length=150, help_text="Who approved it (user or actor).")
    push_status = models.CharField(
        max_length=10, choices=PushStatus.choices, default=PushStatus.NONE
    )
    push_remote = models.CharField(
        max_length=1000, blank=True, help_text="Where it was pushed, credentials masked."
    )
    push_message = models.TextField(blank=True, help_text="What git said, credentials masked.")
    pushed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "sha"],
                condition=models.Q(committed=True),
                name="unique_delivered_commit",
            )
        ]

    def __str__(self) -> str:
        if not self.committed:
            return f"applied in the attached directory ({self.created_at:%Y-%m-%d %H:%M})"
        return f"{self.sha[:12]} on {self.branch}"

    @property
    def subject(self) -> str:
        return self.message.strip().splitlines()[0] if self.message.strip() else ""
