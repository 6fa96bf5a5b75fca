"""Custom agents (issue 41): roles users make from a template, and who made which.

The role itself is an ordinary ``Role`` with ``custom`` set: it is decided, versioned,
diffed and exported like every role, and never holds write, execute or network
permissions (``roles.access.CUSTOM_LOCKED``). Its goals are the role's capabilities, its
checklist the role's constraints (both reach the prompt), its prompt the role's component
in the active pack; this row keeps what a role has no field for (routing keywords), the
template, and who made it, for admins to see."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class CustomAgent(models.Model):
    """Who made a custom agent's role, from which template, with which routing keywords."""

    role = models.OneToOneField("roles.Role", on_delete=models.CASCADE, related_name="agent")
    template = models.ForeignKey(
        "roles.Role", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    template_slug = models.SlugField(max_length=64)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by_name = models.CharField(max_length=150)
    routing_keywords = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        permissions = [("configure", "May create custom agents (read-only roles)")]

    def __str__(self) -> str:
        return f"custom agent {self.role_id} by {self.created_by_name}"
