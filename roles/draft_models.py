"""Reviewed changes to protected roles: an edit of a protected role is kept as a draft
until another admin publishes it (``roles.services.drafts``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class RoleDraftStatus(models.TextChoices):
    OPEN = "open", "open (waiting for review)"
    PUBLISHED = "published", "published"
    REJECTED = "rejected", "rejected"
    # Another draft of the same role was published: this one's base is gone for good.
    SUPERSEDED = "superseded", "superseded by another published draft"


class RoleDraft(models.Model):
    """A proposed full content for a protected role, its diff against the version it is
    based on, and its example results when it was made; only publishing applies it."""

    role = models.ForeignKey(
        "roles.Role", null=True, on_delete=models.SET_NULL, related_name="drafts"
    )
    role_slug = models.SlugField(max_length=64, db_index=True)
    base_version = models.ForeignKey(
        "roles.RoleVersion", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    base_number = models.PositiveIntegerField(
        default=0, help_text="The role's version number the draft was made from."
    )
    content = models.JSONField(help_text="The role's full proposed content.")
    diff = models.JSONField(
        default=list, help_text="Per field: {field, before, after}, against the base."
    )
    example_results = models.JSONField(
        default=list, help_text="The role's examples decided against the draft when made."
    )
    status = models.CharField(
        max_length=20, choices=RoleDraftStatus.choices, default=RoleDraftStatus.OPEN
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    author_name = models.CharField(max_length=150)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_by_name = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True, help_text="Why it was published or rejected.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        permissions = [
            ("publish_roledraft", "Can publish or reject another admin's draft of a role"),
        ]

    def __str__(self) -> str:
        return f"draft #{self.pk} of {self.role_slug} (on v{self.base_number}, {self.status})"
