from __future__ import annotations

import logging

from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    """Agent sessions: where a role is in force."""

    name = "sessions_app"
    label = "sessions_app"
    verbose_name = "Agent sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import acode.celery  # noqa: F401 - binds shared tasks to acode's Celery app
        from acode.readiness import readiness_register
        from sessions_app import backlog_admin, readiness, receivers  # noqa: F401 (admin)

        receivers.connect()
        from sessions_app.services.secrets import redaction_configure

        redaction_configure()  # every door redacts with the team's rules and known values
        from roles.history import decision_history_register
        from sessions_app.selectors.decisions import recorded_decisions

        decision_history_register(recorded_decisions)
        readiness_register("sandbox", readiness.sandbox_problem)
        readiness_register("workers", readiness.workers_problem)
        from sessions_app.containment import sandbox_required

        if not sandbox_required():  # development only: say so loudly in every process
            logging.getLogger("sessions_app").warning(
                "ACODE_SANDBOX=off: agent commands run WITHOUT the OS sandbox; every call "
                "records sandboxed=false. Never use this in production."
            )
