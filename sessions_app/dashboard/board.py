"""The board: the sessions a user may see, as cards in one column per current role, and
the form that opens a new session.

It is live over ``/ws/board/`` (``sessions_app.consumers.BoardConsumer``): the view and
the socket render the same partials of ``dashboard/board.html``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qs, urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from acode.errors import AcodeError
from acode.inputs import has_forbidden_characters, is_blank, trim_invisible
from acode.middleware import request_id_of
from acode.modelserver import MODEL_ALIAS
from roles.registry import registry
from sessions_app.dashboard.board_cards import BoardCard, BoardColumn, board_card
from sessions_app.dashboard.formatting import (
    all_role_badges,
    role_badge,
)
from sessions_app.dashboard.live import BOARD_SOCKET_PATH
from sessions_app.filters import SessionFilter
from sessions_app.models import AgentSession, SessionStatus
from sessions_app.permissions import (
    can_attach_workspace,
    can_view_all,
    repositories_usable_by,
    sessions_visible_to,
)
from sessions_app.selectors.board import (
    board_cards,
    newest_per_role,
    repository_names,
    session_owner_names,
    session_role_slug,
    sessions_in_roles,
    sessions_per_role,
)
from sessions_app.services.event_catalog import BOARD_COLUMN, BOARD_PAGE
from sessions_app.services.sessions import session_create

BOARD_TEMPLATE = BOARD_PAGE.template
# Cards shown per board column; the rest are counted ("and 12 more"). A card costs about
# 0.3 ms to render, so six full columns stay well inside the page's 200 ms at any volume
# (bench/scale.py); search and filters reach the rest.
COLUMN_LIMIT = 25
# The API's limits for a new session's fields (SessionCreateInput).
TITLE_MAX_CHARS = 200
TASK_MAX_CHARS = 20_000


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
        """Sessions the user may see that match; the role is left to the columns. Archived
        ones only when asked for: a backlog archives a session per done task."""
        data = {"q": self.q, "owner": self.owner, "status": self.status}
        found = SessionFilter(data, queryset=sessions_visible_to(user)).qs
        return found if self.status else found.exclude(status=SessionStatus.ARCHIVED)


def board_columns(
    user: User, filters: BoardFilters, only: Iterable[str] | None = None
) -> list[BoardColumn]:
    """The board's columns (all shown ones, or just ``only``) with their cards.

    Three queries at any volume: the sessions per column are counted in the database, and
    only each column's newest ``COLUMN_LIMIT`` (ranked there) are read, with what their
    cards show.
    """
    slugs = filters.role_slugs()
    if only is not None:
        wanted = set(only)
        slugs = [s for s in slugs if s in wanted]
    if not slugs:
        return []
    now = timezone.now()
    slug_of = {registry.get(s).id: s for s in slugs}
    matching = sessions_in_roles(filters.sessions(user), list(slug_of))
    totals = dict.fromkeys(slugs, 0)
    for role_id, count in sessions_per_role(matching).items():
        totals[slug_of[role_id]] = count
    cards: dict[str, list[BoardCard]] = {s: [] for s in slugs}
    for session in board_cards(newest_per_role(matching, COLUMN_LIMIT)):
        cards[slug_of[session.current_role_id]].append(board_card(session, now))
    return [BoardColumn(role_badge(s), cards[s], totals[s]) for s in slugs]


def board_owner_choices(user: User) -> list[str]:
    """Owners of the sessions the user may see, for the owner filter."""
    return session_owner_names(sessions_visible_to(user))


def render_board_columns(columns: Sequence[BoardColumn]) -> str:
    """The columns as pushed over the websocket: each one's root has its stable id."""
    return "".join(
        render_to_string(f"{BOARD_TEMPLATE}#{BOARD_COLUMN}", {"column": column})
        for column in columns
    )


def render_board(user: User, filters: BoardFilters) -> str:
    """The whole board body, sent on connect so a reconnecting page resynchronises, and
    when role data changes: the columns, the role filter and the embedded-model notice."""
    context = {
        "columns": board_columns(user, filters),
        "filters": filters,
        "all_roles": all_role_badges(),
        "embedded_model": embedded_model_in_use(),
    }
    return "".join(
        render_to_string(f"{BOARD_TEMPLATE}#{name}", context) for name in BOARD_PAGE.fragments
    )


def render_board_update(
    user: User, filters: BoardFilters, session_id: str, from_role: str | None
) -> str:
    """What a board shows after an event in one session: the columns it left and entered.

    Empty when the user may not see the session, or none of those columns are shown.
    """
    role = session_role_slug(sessions_visible_to(user), session_id)
    if role is None:
        return ""
    affected = {role}
    if from_role:
        affected.add(from_role)
    return render_board_columns(board_columns(user, filters, only=affected))


@dataclass
class NewSessionForm:
    """The board's "New session" form: what was typed, and the refusal if there was one."""

    title: str = ""
    task: str = ""
    repository: str = ""
    workspace: str = ""
    error_code: str = ""
    error_message: str = ""
    error_field: str = ""

    @classmethod
    def from_post(cls, data: Mapping[str, Any]) -> NewSessionForm:
        return cls(
            title=str(data.get("title", "")),
            task=str(data.get("task", "")),
            repository=str(data.get("repository", "")).strip(),
            workspace=str(data.get("workspace", "")).strip(),
        )

    def refuse(self, error: AcodeError) -> NewSessionForm:
        self.error_code, self.error_message = error.code, error.message
        self.error_field = str(error.details.get("field", "")) if error.details else ""
        if not self.error_field:
            known = {"ACODE-SES-005": "repository", "ACODE-SES-002": "workspace"}
            self.error_field = known.get(error.code, "")
        return self


def _invalid(field: str, message: str) -> AcodeError:
    return AcodeError("ACODE-API-400", message, {"field": field})


def new_session_values(form: NewSessionForm) -> dict[str, Any]:
    """The form's fields as ``session_create`` takes them, or the first refusal (the API's
    rules for the same fields: a visible title, the length limits, one workspace source)."""
    for name in ("title", "task", "repository", "workspace"):
        if has_forbidden_characters(getattr(form, name)):
            raise _invalid(name, f"The {name} contains characters that are not allowed.")
    title = trim_invisible(form.title)
    if not title or is_blank(title):
        raise _invalid("title", "A session needs a title.")
    if len(title) > TITLE_MAX_CHARS:
        raise _invalid("title", f"The title has at most {TITLE_MAX_CHARS} characters.")
    task = trim_invisible(form.task)
    if len(task) > TASK_MAX_CHARS:
        raise _invalid("task", f"The task has at most {TASK_MAX_CHARS} characters.")
    if form.repository and form.workspace:
        raise _invalid("workspace", "Choose a repository or a workspace directory, not both.")
    return {
        "title": title,
        "task": task,
        "repository": form.repository or None,
        "workspace": form.workspace or None,
    }


def embedded_model_in_use() -> str:
    """The embedded small model's name when a role routes to it (a role naming no model
    gets the settings' endpoint, which serves it), else ''."""
    name = settings.ACODE_LLM_DEFAULT_MODEL
    if name == MODEL_ALIAS and any(not r.spec.preferred_model for r in registry.list_roles()):
        return name
    return ""


def _board_page(
    request: HttpRequest, new_session: NewSessionForm | None = None, status: int = 200
) -> HttpResponse:
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
            "new_session": new_session or NewSessionForm(),
            "repositories": repository_names(repositories_usable_by(user)),
            "can_attach": can_attach_workspace(user),
            "embedded_model": embedded_model_in_use(),
        },
        status=status,
    )


@login_required
@require_GET
def board(request: HttpRequest) -> HttpResponse:
    """Sessions as cards in one column per current role, live over ``/ws/board/``."""
    return _board_page(request)


@login_required
@require_POST
def session_new(request: HttpRequest) -> HttpResponse:
    """Open a session from the board's form (the same rules as ``POST /api/sessions/``)
    and go to its page; a refusal comes back in the form, with its code."""
    user = cast(User, request.user)
    form = NewSessionForm.from_post(request.POST)
    try:
        session = session_create(
            owner=user,
            request_id=request_id_of(request),
            **new_session_values(form),
        )
    except AcodeError as error:
        return _board_page(request, form.refuse(error), status=400)
    return HttpResponseRedirect(reverse("dashboard-session", kwargs={"pk": session.pk}))
