from __future__ import annotations

from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    """Agent sessions: where a role is in force."""

    name = "sessions_app"
    label = "sessions_app"
    verbose_name = "Agent sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import acode.celery  # noqa: F401 - binds shared tasks to acode's Celery app
        from sessions_app import receivers

        receivers.connect()
