from __future__ import annotations

from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The audit log: its rows, their hash chains, anchors and verifications.

    Below ``roles`` and ``sessions_app``: both record their facts here directly, and it
    imports neither. Its tables keep the names they had in the sessions app."""

    name = "audit"
    label = "audit"
    verbose_name = "Audit log"
    default_auto_field = "django.db.models.BigAutoField"
