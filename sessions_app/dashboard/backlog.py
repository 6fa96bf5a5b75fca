"""The kanban: a project's tasks in columns by status, live over ``/ws/backlog/<slug>/``
for every viewer; each card with its run's stage and risk, a blocked card with its
reason, and (for who may act) accept, reject, reprioritise and unblock through the
services; rejected proposals in a collapsed list under the columns; the Product Manager's
latest job (a plan or a completeness check) above the columns, and a form giving it the
project's spec."""

from __future__ import annotations

from typing import Any, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from acode.errors import AcodeError
from sessions_app.dashboard.live import back_to
from sessions_app.selectors.backlog import board_of
from sessions_app.services.backlog import (
    task_accept,
    task_reject,
    task_reprioritise,
    task_unblock,
)
from sessions_app.services.backlog_access import (
    can_act_on_project,
    project_for,
    projects_visible_to,
    task_for,
)
from sessions_app.services.backlog_integration import integration_head
from sessions_app.services.backlog_pm import project_plan

BACKLOG_TEMPLATE = "dashboard/backlog.html"
PRIORITIES = ("high", "medium", "low")


def backlog_socket_path(slug: str) -> str:
    return f"/ws/backlog/{slug}/"


def kanban_context(user: Any, slug: str) -> dict[str, Any]:
    project = project_for(user, slug)
    return {
        "board": board_of(project, may_act=can_act_on_project(user, project)),
        "integration_head": integration_head(project),
        "priorities": PRIORITIES,
    }


def render_kanban(user: Any, slug: str) -> str:
    """The kanban fragment the page shows and the socket pushes ('' when not visible)."""
    try:
        context = kanban_context(user, slug)
    except AcodeError:
        return ""
    return render_to_string(f"{BACKLOG_TEMPLATE}#kanban", context)


@login_required
@require_GET
def backlog_projects(request: HttpRequest) -> HttpResponse:
    """The boards the user may see."""
    projects = projects_visible_to(request.user)
    return render(request, "dashboard/backlog.html", {"nav": "backlog", "projects": projects})


@login_required
@require_GET
def backlog_board(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        context = kanban_context(request.user, slug)
    except AcodeError:
        raise Http404("No such project, or it is not yours to see.") from None
    return render(
        request,
        BACKLOG_TEMPLATE,
        {"nav": "backlog", "ws_url": backlog_socket_path(slug), **context},
    )


@login_required
@require_POST
def backlog_task_action(request: HttpRequest, slug: str, key: str, action: str) -> HttpResponse:
    """Accept, reject, reprioritise or unblock through the service; a refusal comes back as
    a message.

    The board's forms post with htmx (its header carries the CSRF token, which a fragment
    pushed over the socket cannot): the answer is the kanban fragment, or after a refusal
    the board again, showing the message; without htmx, the board again."""
    user = cast(User, request.user)
    board = reverse("dashboard-backlog", kwargs={"slug": slug})
    try:
        task = task_for(user, slug, key, act=True)
        if action == "accept":
            task_accept(task=task, user=user)
        elif action == "reject":
            task_reject(task=task, user=user, reason=request.POST.get("reason", "")[:2000])
        elif action == "unblock":
            task_unblock(task=task, user=user, note=request.POST.get("note", "")[:2000])
        elif action == "priority":
            task_reprioritise(task=task, priority=request.POST.get("priority", ""), user=user)
        else:
            raise Http404("No such action.")
    except AcodeError as error:
        messages.error(request, error.message, error.code)
        if request.headers.get("HX-Request"):
            return back_to(request, board)
    if request.headers.get("HX-Request"):
        return HttpResponse(render_kanban(user, slug))
    return HttpResponseRedirect(board)


@login_required
@require_POST
def backlog_plan(request: HttpRequest, slug: str) -> HttpResponse:
    """Give the Product Manager the project's spec (``project_plan``); a refusal comes back
    as a message."""
    user = cast(User, request.user)
    try:
        project = project_for(user, slug, act=True)
        job = project_plan(project=project, spec=request.POST.get("spec", "")[:20000], user=user)
        messages.success(request, f"The Product Manager is planning (job {str(job.pk)[:8]}).")
    except AcodeError as error:
        messages.error(request, error.message, error.code)
    return HttpResponseRedirect(reverse("dashboard-backlog", kwargs={"slug": slug}))
