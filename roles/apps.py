from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class RolesConfig(AppConfig):
    """Roles, permissions, tools, transition rules and prompt packs."""

    name = "roles"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from roles import signals

        signals.connect()
        post_migrate.connect(_seed_after_migrate, sender=self)


def _seed_after_migrate(sender: AppConfig, using: str = "default", **kwargs: Any) -> None:
    # Seeding runs after every migrate (and after a test flush) but only writes when
    # the database holds no roles at all, so admins' edits are never overwritten.
    from roles.services import seed_defaults

    seed_defaults(using=using)
