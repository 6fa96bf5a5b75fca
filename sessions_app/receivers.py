"""What the sessions app does when others ask: list an MCP server's tools when the roles
app asks for it, and seed the shipped workflows after migrating.

(Role data's audit rows and live push are no signals: ``roles.services`` record them
directly in the ``audit`` app and ``acode.live``.)
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db.models.signals import post_migrate, post_save

from roles.signals import mcp_refresh_requested
from sessions_app.agent.mcp.servers import mcp_server_refresh_asked


def _mcp_refresh_requested(sender: Any, server: Any, actor: str, **kwargs: Any) -> Any:
    # A server that cannot be reached is its state (recorded on it), not our error: the
    # failure is returned to the caller (send_robust) instead of being logged with a trace.
    return mcp_server_refresh_asked(server=server, actor=actor)


def _seed_runs(sender: Any, **kwargs: Any) -> None:
    # After roles are seeded (their app migrates first): the shipped workflow templates and
    # risk signals, written only when there are none, so admins' edits are kept.
    from sessions_app.services.runs import runs_seed_defaults

    runs_seed_defaults()


def _question_answered(sender: Any, instance: Any, **kwargs: Any) -> None:
    # Decision memory (issue 41): a person's answer to a stage's question is remembered.
    if instance.answered_at is not None:
        from sessions_app.services.memory import question_remember

        question_remember(instance)


def connect() -> None:
    post_save.connect(
        _question_answered,
        sender=apps.get_model("sessions_app", "RunQuestion"),
        dispatch_uid="acode-question-memory",
    )
    post_migrate.connect(
        _seed_runs, sender=apps.get_app_config("sessions_app"), dispatch_uid="acode-runs-seed"
    )
    mcp_refresh_requested.connect(_mcp_refresh_requested, dispatch_uid="acode-mcp-refresh")
