"""What every sessions API view shares: who is asking, which session, documented errors."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request

from sessions_app.models import AgentSession, Job
from sessions_app.permissions import jobs_visible_to, session_can_act, session_can_view

IDEMPOTENCY = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Retries with the same key return the first result and write nothing new "
    "(at most 200 characters).",
)
REQUEST_ID = OpenApiParameter(
    "X-Request-ID",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Recorded on the transition for tracing (at most 200 characters; without "
    "it the server makes one up). Every response carries the id back in this header.",
)

# The codes views raise, by what they do; the schema also lists what any request may get
# (acode.errors.document_common_errors).
NOT_VISIBLE_CODES = ("ACODE-API-404",)  # the session or job is not visible to the caller
ACT_CODES = ("ACODE-API-403", "ACODE-API-404")  # visible but read-only, or not visible
INVALID_CODES = ("ACODE-API-400", "ACODE-INP-001", "ACODE-INP-002", "ACODE-INP-003")


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
