from __future__ import annotations

from django.apps import AppConfig


class RolesConfig(AppConfig):
    """Roles, permissions, tools, transition rules and prompt packs."""

    name = "roles"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from roles import receivers

        receivers.connect(self)
