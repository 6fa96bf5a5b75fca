"""Who made an account, or gave it admin rights: so that two people are two people.

A protected role changes only when another admin publishes its draft
(``roles.services.draft_review``); an account its author created, or made staff or
superuser, or gave permissions or groups, is not another person. Each such grant is kept
here by the admin pages that make them (``roles.admin.accounts``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AccountGrantKind(models.TextChoices):
    CREATED = "created", "created the account"
    STAFF = "staff", "made it staff"
    SUPERUSER = "superuser", "made it a superuser"
    PERMISSIONS = "permissions", "changed its permissions or groups"


class AccountGrant(models.Model):
    """One account created or given rights by someone (``granted_by``)."""

    account = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="grants_received"
    )
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    granted_by_name = models.CharField(max_length=150)
    kind = models.CharField(max_length=20, choices=AccountGrantKind.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["granted_by", "account"], name="grant_by_account")]

    def __str__(self) -> str:
        return f"{self.granted_by_name} {self.get_kind_display()} ({self.account_id})"
