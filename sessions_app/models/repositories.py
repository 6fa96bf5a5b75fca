"""Repositories an administrator registered; sessions work on clones of them."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models


class Repository(models.Model):
    """A git repository sessions may clone: a path on the server or a git URL.

    Only the listed users and groups (and superusers) may start sessions on it.
    """

    name = models.SlugField(max_length=100, unique=True)
    description = models.CharField(max_length=300, blank=True)
    source = models.CharField(
        max_length=1000,
        help_text="A path on the server, a file:// or an https:// git URL.",
    )
    default_branch = models.CharField(
        max_length=200, blank=True, help_text="Branch to start from (empty: the source's HEAD)."
    )
    pushable = models.BooleanField(
        default=False,
        help_text="Push approved work to the source as branch acode/<session> after each "
        "commit. Credentials in an https URL (https://user:token@host/...) are used for the "
        "push and never shown.",
    )
    users = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="+")
    groups = models.ManyToManyField(Group, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "repositories"

    def __str__(self) -> str:
        return self.name
