"""Dashboard pages (HTML): board, session, roles, audit log and usage.

Views read through ``sessions_app.dashboard`` (the same helpers the websocket consumers
render with) and change state only through ``sessions_app.services``.
"""

from __future__ import annotations

from typing import Any, cast
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from acode.errors import AcodeError
from roles.registry import registry
from sessions_app import services
from sessions_app.audit import audit_verify
from sessions_app.dashboard import (
    BOARD_SOCKET_PATH,
    AuditFilterForm,
    BoardFilters,
    SessionPage,
    audit_rows,
    badge_of,
    board_columns,
    board_owner_choices,
    roles_overview,
    session_socket_path,
    usage_chart,
    viewer_for,
)
from sessions_app.models import SessionStatus
from sessions_app.selectors import audit_visible_to, session_can_act, session_list

AUDIT_PAGE_SIZE = 50


def _user(request: HttpRequest) -> User:
    """The logged-in user (every view here is behind ``login_required``)."""
    return cast(User, request.user)


def _all_role_badges() -> list[Any]:
    return [badge_of(role) for role in registry.list_roles()]


@login_required
@require_GET
def board(request: HttpRequest) -> HttpResponse:
    """Sessions as cards in one column per current role, live over ``/ws/board/``."""
    user = _user(request)
    filters = BoardFilters.from_mapping(request.GET)
    query = filters.as_query()
    return render(
        request,
        "dashboard/board.html",
        {
            "nav": "board",
            "filters": filters,
            "columns": board_columns(user, filters),
            "all_roles": _all_role_badges(),
            "owners": board_owner_choices(user),
            "statuses": SessionStatus.choices,
            "view_all": viewer_for(user).view_all,
            "ws_url": BOARD_SOCKET_PATH + (f"?{query}" if query else ""),
        },
    )


def _visible_session_page(request: HttpRequest, pk: UUID) -> SessionPage:
    session = session_list(user=_user(request)).select_related("role_version").filter(pk=pk).first()
    if session is None:
        raise Http404("No such session, or it is not yours to see.")
    return SessionPage(session)


@login_required
@require_GET
def session_detail(request: HttpRequest, pk: UUID) -> HttpResponse:
    """One session: role, transitions allowed now, timeline, plan, jobs, changes, time."""
    page = _visible_session_page(request, pk)
    return render(
        request,
        "dashboard/session.html",
        {
            "nav": "board",
            "page": page,
            "can_act": session_can_act(_user(request), page.session),
            "ws_url": session_socket_path(pk),
        },
    )


@login_required
@require_POST
def session_transition(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Change the session's role through the service; a refusal comes back as a message."""
    page = _visible_session_page(request, pk)
    back = HttpResponseRedirect(reverse("dashboard-session", kwargs={"pk": pk}))
    user = _user(request)
    if not session_can_act(user, page.session):
        messages.error(
            request, "You may view this session but not change its role.", "ACODE-API-403"
        )
        return back
    to_role = request.POST.get("to_role", "").strip()
    if not to_role:
        messages.error(request, "Choose the role to change to.", "ACODE-API-400")
        return back
    try:
        result = services.session_transition(
            session=page.session,
            to_role=to_role,
            reason=request.POST.get("reason", ""),
            user=user,
            expected_role=request.POST.get("expected_role", "").strip() or None,
            request_id=request.headers.get("X-Request-ID") or None,
        )
    except AcodeError as error:
        suggestion = error.details.get("suggestion") if error.details else None
        text = error.message if not suggestion else f"{error.message} {suggestion}."
        messages.error(request, text, error.code)
        return back
    if result.changed:
        messages.success(request, result.message)
    else:
        messages.info(request, result.message)
    return back


@login_required
@require_GET
def roles(request: HttpRequest) -> HttpResponse:
    """Every role's definition, the roles-by-tools matrix and the transition rules."""
    return render(request, "dashboard/roles.html", {"nav": "roles", **roles_overview()})


@login_required
@require_GET
def audit(request: HttpRequest) -> HttpResponse:
    """The audit log, newest first: filterable, paginated, exportable with the same filters."""
    form = AuditFilterForm(request.GET or None)
    qs = form.filter(audit_visible_to(_user(request))).order_by("-seq")
    page_obj = Paginator(qs, AUDIT_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "dashboard/audit.html",
        {
            "nav": "audit",
            "form": form,
            "query": form.query(),
            "page_obj": page_obj,
            "rows": audit_rows(page_obj.object_list),
            "all_roles": _all_role_badges(),
        },
    )


@login_required
@require_GET
def audit_chain(request: HttpRequest) -> HttpResponse:
    """The chain status badge (the audit page loads it after the table)."""
    return render(request, "dashboard/audit.html#chain", {"chain": audit_verify()})


@login_required
@require_GET
def usage(request: HttpRequest) -> HttpResponse:
    """Time-in-role distribution as a server-rendered SVG, against the spec's targets."""
    user = _user(request)
    return render(
        request,
        "dashboard/usage.html",
        {"nav": "usage", "chart": usage_chart(user), "view_all": viewer_for(user).view_all},
    )
