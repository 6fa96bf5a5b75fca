"""The board: the sessions a user may see, as cards in one column per current role.

It is live over ``/ws/board/`` (``sessions_app.consumers.BoardConsumer``): the view and
the socket render the same partials of ``dashboard/board.html``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast
from urllib.parse import parse_qs, urlencode

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.http import require_GET

from roles.registry import registry
from sessions_app.dashboard.formatting import (
    RoleBadge,
    Stamp,
    all_role_badges,
    duration_text,
    plan_progress,
    role_badge,
    stamp_of,
)
from sessions_app.dashboard.jobs import JOB_LABELS
from sessions_app.dashboard.live import BOARD_SOCKET_PATH
from sessions_app.filters import SessionFilter
from sessions_app.models import AgentSession, Job, SessionStatus
from sessions_app.permissions import can_view_all, sessions_visible_to

BOARD_TEMPLATE = "dashboard/board.html"
# Cards shown per board column; the rest are counted ("and 12 more").
COLUMN_LIMIT = 60


@dataclass(frozen=True)
class Viewer:
    """Who is looking at a board, as far as ``sessions_visible_to`` tells users apart:
    viewers with the same scope see the same sessions, so they can share a rendering."""

    user_id: int
    view_all: bool

    @property
    def scope(self) -> str:
        return "all" if self.view_all else f"owner:{self.user_id}"


def viewer_for(user: User) -> Viewer:
    return Viewer(user_id=int(user.pk), view_all=can_view_all(user))


@dataclass(frozen=True)
class BoardFilters:
    """Search and filters of the board; the page URL and its websocket URL carry the same.

    A hashable value, so sockets with the same filters can share a rendering; the
    filtering itself is ``SessionFilter``'s.
    """

    q: str = ""
    role: str = ""
    owner: str = ""
    status: str = ""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> BoardFilters:
        def one(name: str) -> str:
            value = data.get(name, "")
            if isinstance(value, list):
                value = value[0] if value else ""
            return str(value).strip()[:200]

        status = one("status")
        return cls(
            q=one("q"),
            role=one("role"),
            owner=one("owner"),
            status=status if status in SessionStatus.values else "",
        )

    @classmethod
    def from_query_string(cls, query_string: bytes | str) -> BoardFilters:
        if isinstance(query_string, bytes):
            query_string = query_string.decode("latin-1")
        return cls.from_mapping(parse_qs(query_string))

    @property
    def active(self) -> bool:
        return bool(self.q or self.role or self.owner or self.status)

    def as_query(self) -> str:
        return urlencode({k: v for k, v in self.__dict__.items() if v})

    def role_slugs(self) -> list[str]:
        """The columns shown: every role, or the filtered one."""
        roles = registry.list_roles()
        if not self.role:
            return [r.slug for r in roles]
        wanted = self.role.lower()
        return [r.slug for r in roles if wanted in (r.slug.lower(), r.name.lower())]

    def sessions(self, user: User) -> QuerySet[AgentSession]:
        """Sessions the user may see that match; the role is left to the columns."""
        data = {"q": self.q, "owner": self.owner, "status": self.status}
        return SessionFilter(data, queryset=sessions_visible_to(user)).qs


@dataclass(frozen=True)
class BoardCard:
    """One session on the board."""

    id: str
    title: str
    role: RoleBadge
    since: Stamp
    in_role: str
    last_reason: str
    owner: str
    status: str
    status_label: str
    risk_tier: str
    plan_done: int
    plan_total: int
    changes: int
    job_status: str = ""
    job_label: str = ""


@dataclass(frozen=True)
class BoardColumn:
    """One role's column of cards."""

    role: RoleBadge
    cards: list[BoardCard]
    total: int

    @property
    def more(self) -> int:
        return self.total - len(self.cards)


def board_queryset(user: User, filters: BoardFilters) -> QuerySet[AgentSession]:
    """Visible sessions matching the filters, with what their cards show."""
    latest_job = Job.objects.filter(session=OuterRef("pk")).order_by("-created_at")
    return (
        filters.sessions(user)
        .annotate(
            changes_count=Count("pending_changes"),
            latest_job_status=Subquery(latest_job.values("status")[:1]),
        )
        .order_by("-role_since")
    )


def board_card(session: AgentSession, now: datetime) -> BoardCard:
    """A session's card; ``session`` comes annotated from :func:`board_queryset`."""
    done, total = plan_progress(session.plan)
    job_status = session.latest_job_status or ""  # type: ignore[attr-defined]
    return BoardCard(
        id=str(session.id),
        title=session.title,
        role=role_badge(session.current_role.slug),
        since=stamp_of(session.role_since),
        in_role=duration_text((now - session.role_since).total_seconds()),
        last_reason=session.last_reason,
        owner=session.owner.get_username(),
        status=session.status,
        status_label=session.get_status_display(),
        risk_tier=session.risk_tier,
        plan_done=done,
        plan_total=total,
        changes=session.changes_count,  # type: ignore[attr-defined]
        job_status=job_status,
        job_label=JOB_LABELS.get(job_status, ""),
    )


def board_columns(
    user: User, filters: BoardFilters, only: Iterable[str] | None = None
) -> list[BoardColumn]:
    """The board's columns (all shown ones, or just ``only``) with their cards."""
    slugs = filters.role_slugs()
    if only is not None:
        wanted = set(only)
        slugs = [s for s in slugs if s in wanted]
    if not slugs:
        return []
    now = timezone.now()
    qs = board_queryset(user, filters).filter(current_role__slug__in=slugs)
    cards: dict[str, list[BoardCard]] = {s: [] for s in slugs}
    totals = dict.fromkeys(slugs, 0)
    for session in qs.iterator(chunk_size=500):
        slug = session.current_role.slug
        totals[slug] += 1
        if len(cards[slug]) < COLUMN_LIMIT:
            cards[slug].append(board_card(session, now))
    return [BoardColumn(role_badge(s), cards[s], totals[s]) for s in slugs]


def board_owner_choices(user: User) -> list[str]:
    """Owners of the sessions the user may see, for the owner filter."""
    qs = sessions_visible_to(user).order_by().values_list("owner__username", flat=True)
    return sorted(set(qs.distinct()))


def render_board_columns(columns: Sequence[BoardColumn]) -> str:
    """The columns as pushed over the websocket: each one's root has its stable id."""
    return "".join(
        render_to_string(f"{BOARD_TEMPLATE}#column", {"column": column}) for column in columns
    )


def render_board(user: User, filters: BoardFilters) -> str:
    """The whole board body, sent on connect so a reconnecting page resynchronises."""
    return render_to_string(
        f"{BOARD_TEMPLATE}#columns", {"columns": board_columns(user, filters), "filters": filters}
    )


def render_board_update(
    user: User, filters: BoardFilters, session_id: str, from_role: str | None
) -> str:
    """What a board shows after an event in one session: the columns it left and entered.

    Empty when the user may not see the session, or none of those columns are shown.
    """
    visible = sessions_visible_to(user).filter(pk=session_id)
    role = visible.values_list("current_role__slug", flat=True).first()
    if role is None:
        return ""
    affected = {role}
    if from_role:
        affected.add(from_role)
    return render_board_columns(board_columns(user, filters, only=affected))


@login_required
@require_GET
def board(request: HttpRequest) -> HttpResponse:
    """Sessions as cards in one column per current role, live over ``/ws/board/``."""
    user = cast(User, request.user)
    filters = BoardFilters.from_mapping(request.GET)
    query = filters.as_query()
    return render(
        request,
        BOARD_TEMPLATE,
        {
            "nav": "board",
            "filters": filters,
            "columns": board_columns(user, filters),
            "all_roles": all_role_badges(),
            "owners": board_owner_choices(user),
            "statuses": SessionStatus.choices,
            "view_all": can_view_all(user),
            "ws_url": BOARD_SOCKET_PATH + (f"?{query}" if query else ""),
        },
    )
