"""Calls put to a person (``ToolConsent``), as pages and the API list them."""

from __future__ import annotations

from django.db.models import Case, When

from sessions_app.models import AgentSession
from sessions_app.models.consents import ConsentStatus, ToolConsent


def session_consents(session: AgentSession, *, limit: int = 20) -> list[ToolConsent]:
    """The session's calls put to a person: those waiting first, then the most recent
    answered, ``limit`` in all (one query)."""
    waiting_first = Case(When(status=ConsentStatus.PENDING, then=0), default=1)
    rows = session.tool_consents.annotate(done=waiting_first).order_by("done", "-created_at")
    return list(rows[: max(1, limit)])
