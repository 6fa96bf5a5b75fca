"""Calls put to a person (``ToolConsent``), as pages and the API list them."""

from __future__ import annotations

from sessions_app.models import AgentSession
from sessions_app.models.consents import ConsentStatus, ToolConsent


def session_consents(session: AgentSession, *, limit: int = 20) -> list[ToolConsent]:
    """The session's calls put to a person, pending first, then the most recent."""
    pending = list(
        session.tool_consents.filter(status=ConsentStatus.PENDING).order_by("created_at")
    )
    done = list(session.tool_consents.exclude(status=ConsentStatus.PENDING)[: max(0, limit)])
    return pending + done
