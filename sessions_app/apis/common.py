"""What every sessions API view shares: who is asking, which session, documented errors."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request

from sessions_app.models import AgentSession, Job
from sessions_app.permissions import jobs_visible_to, session_can_act, session_can_view

IDEMPOTENCY = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Retries with the same key return the first result and write nothing new.",
)
REQUEST_ID = OpenApiParameter(
    "X-Request-ID",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Recorded on the transition for tracing.",
)
ERRORS = {
    400: OpenApiResponse(description="ACODE-API-400, ACODE-ROL-001, ACODE-ROL-007 ..."),
    401: OpenApiResponse(description="ACODE-API-401"),
    403: OpenApiResponse(description="ACODE-API-403"),
    404: OpenApiResponse(description="ACODE-API-404"),
    409: OpenApiResponse(description="ACODE-ROL-002, ACODE-ROL-006"),
}


def request_user(request: Request) -> User:
    """The authenticated user (every endpoint here requires authentication)."""
    return cast(User, request.user)


NOT_VISIBLE = "No session with that id is visible to you."


def check_session_access(
    user: Any, session: AgentSession | None, *, act: bool = False
) -> AgentSession:
    """The session if the user may see it (and act on it, with ``act``); 404 / 403 otherwise."""
    if session is None or not session_can_view(user, session):
        raise NotFound(NOT_VISIBLE)
    if act and not session_can_act(user, session):
        raise PermissionDenied("You may view this session but not act on it.")
    return session


def session_for(request: Request, pk: Any, *, act: bool = False) -> AgentSession:
    session = AgentSession.objects.select_related("owner").filter(pk=pk).first()
    return check_session_access(request_user(request), session, act=act)


def job_for(request: Request, pk: Any, *, act: bool = False) -> Job:
    user = request_user(request)
    job = jobs_visible_to(user).filter(pk=pk).first()
    if job is None:
        raise NotFound("No job with that id is visible to you.")
    if act and not session_can_act(user, job.session):
        raise PermissionDenied("You may view this job but not act on it.")
    return job
