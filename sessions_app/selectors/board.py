"""What the board reads: how many sessions each column has, the newest of each, and the
sessions with what their cards show (the latest job's and run's status, the number of
pending changes); the owners and repositories its forms offer."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, F, OuterRef, QuerySet, Subquery, Window
from django.db.models.functions import RowNumber

from sessions_app.models import AgentSession, Job, Repository, Run

# Only what a card shows: no role row (the registry has it), no task or workspace.
CARD_FIELDS = (
    "id", "title", "current_role_id", "role_since", "last_reason", "status", "risk_tier",
    "plan", "owner__username",
)  # fmt: skip


def sessions_in_roles(
    sessions: QuerySet[AgentSession], role_ids: list[int]
) -> QuerySet[AgentSession]:
    """Those of ``sessions`` whose current role is one of ``role_ids`` (the columns shown)."""
    return sessions.filter(current_role_id__in=role_ids)


def sessions_per_role(sessions: QuerySet[AgentSession]) -> dict[int, int]:
    """How many of ``sessions`` are in each role, by role id (counted in the database)."""
    rows = sessions.order_by().values_list("current_role_id").annotate(n=Count("pk"))
    return {role_id: count for role_id, count in rows}


def newest_per_role(sessions: QuerySet[AgentSession], limit: int) -> list[Any]:
    """The ids of the ``limit`` sessions of each role that entered it last (ranked in the
    database)."""
    newest = sessions.annotate(
        rank=Window(RowNumber(), partition_by=F("current_role_id"), order_by=F("role_since").desc())
    ).filter(rank__lte=limit)
    # Read as a list first: with the ids known, the planner sizes the cards query right
    # (as a subquery it guesses thousands of rows, and on PostgreSQL compiles it with JIT).
    return list(newest.values_list("pk", flat=True))


def board_cards(ids: list[Any]) -> QuerySet[AgentSession]:
    """The sessions ``ids`` (found visible and matching already, so the search is not run
    a second time) with what their cards show, the role's newest first: the owner, the
    number of pending changes (``changes_count``) and the status of the latest job and run
    (``latest_job_status``, ``latest_run_status``, and the run's ``latest_run_code`` and
    ``latest_run_message``), and an outside agent's kind (``outside_agent``)."""
    latest_job = Job.objects.filter(session=OuterRef("pk")).order_by("-created_at")
    latest_run = Run.objects.filter(session=OuterRef("pk")).order_by("-created_at")
    return (
        AgentSession.objects.filter(pk__in=ids)
        .annotate(
            changes_count=Count("pending_changes"),
            latest_job_status=Subquery(latest_job.values("status")[:1]),
            latest_run_status=Subquery(latest_run.values("status")[:1]),
            # How the latest run ended and why, for a card whose job succeeded in a run
            # that failed (issue 34).
            latest_run_code=Subquery(latest_run.values("error_code")[:1]),
            latest_run_message=Subquery(latest_run.values("message")[:1]),
            # An outside agent's kind (issue 43), None for acode's own sessions.
            outside_agent=F("outside__agent"),
        )
        .order_by("-role_since")
        .select_related("owner")
        .only(*CARD_FIELDS)
    )


def session_owner_names(sessions: QuerySet[AgentSession]) -> list[str]:
    """The usernames of the owners of ``sessions``, sorted."""
    names = sessions.order_by().values_list("owner__username", flat=True).distinct()
    return sorted(set(names))


def session_role_slug(sessions: QuerySet[AgentSession], session_id: Any) -> str | None:
    """The current role of the session ``session_id`` if it is one of ``sessions``."""
    found = sessions.filter(pk=session_id).values_list("current_role__slug", flat=True)
    return found.first()


def repository_names(repositories: QuerySet[Repository]) -> list[str]:
    return list(repositories.order_by("name").values_list("name", flat=True))
