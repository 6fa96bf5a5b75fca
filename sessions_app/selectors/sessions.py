"""What the session page and the sessions API read of one session: its row for the page,
its history, pending changes, latest run and delivered commits; and the newest audit
event, which moves on every committed change the dashboard shows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from sessions_app.models import (
    AgentSession,
    AuditEvent,
    DeliveredCommit,
    PendingChange,
    RoleTransition,
    Run,
)

# (seq, from-role slug, to-role slug, reason, actor, time) of one transition.
HistoryRow = tuple[int, str | None, str, str, str, datetime]


def session_for_page(pk: Any) -> AgentSession | None:
    """The session with what its page shows of it (its role, owner and role version)."""
    return (
        AgentSession.objects.select_related("current_role", "owner", "role_version")
        .filter(pk=pk)
        .first()
    )


def sessions_listed(sessions: QuerySet[AgentSession]) -> QuerySet[AgentSession]:
    """``sessions`` with what the API shows of each (its role version and repository)."""
    return sessions.select_related("role_version", "repository")


def session_history(session: AgentSession) -> QuerySet[RoleTransition]:
    """Every role transition of the session, oldest first, with its roles."""
    return session.transitions.select_related("from_role", "to_role", "role_version").order_by(
        "seq"
    )


def session_history_rows(session: AgentSession) -> list[HistoryRow]:
    """The session's transitions, oldest first, as the page's timeline reads them."""
    return list(
        session.transitions.order_by("seq").values_list(
            "seq", "from_role__slug", "to_role__slug", "reason", "actor", "created_at"
        )
    )


def session_pending_changes(session: AgentSession) -> QuerySet[PendingChange]:
    """The session's pending changes by path, with the role that made each."""
    return session.pending_changes.select_related("role").order_by("path")


def session_pending_diffs(session: AgentSession) -> dict[str, str]:
    """Path to diff of each pending change (what a job's context shows)."""
    return dict(session.pending_changes.values_list("path", "diff"))


def pending_change_count(session: AgentSession) -> int:
    return session.pending_changes.count()


def session_latest_run_state(session: AgentSession) -> tuple[str, str] | None:
    """(effective risk tier, status) of the session's newest run; None without runs."""
    row = (
        Run.objects.filter(session=session)
        .order_by("-created_at")
        .values_list("effective_tier", "status")
        .first()
    )
    return (str(row[0]), str(row[1])) if row else None


def session_commits(session: AgentSession) -> QuerySet[DeliveredCommit]:
    """What the session delivered on its branch, newest first."""
    return DeliveredCommit.objects.filter(session=session).order_by("-created_at", "-id")


def session_delivered(session: AgentSession, sha: str) -> bool:
    """Did the session deliver the commit ``sha`` on its branch?"""
    return session.commits.filter(sha=sha).exists()


def newest_audit_id() -> int:
    """The id of the newest audit event (0: none yet)."""
    return AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
