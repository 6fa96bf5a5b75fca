"""What every sessions API view shares: who is asking, which session, documented errors."""

from __future__ import annotations

from typing import Any, ClassVar, cast

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.views import APIView

from sessions_app.models import AgentSession, Job, Run
from sessions_app.permissions import (
    SessionAction,
    action_refusal,
    jobs_visible_to,
    session_can_view,
)

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
RUN_OWNS = "ACODE-RUN-003"  # a run executes in the session: only it changes the session
INVALID_CODES = ("ACODE-API-400", "ACODE-INP-001", "ACODE-INP-002", "ACODE-INP-003")


def request_user(request: Request) -> User:
    """The authenticated user (every endpoint here requires authentication)."""
    return cast(User, request.user)


NOT_VISIBLE = "No session with that id is visible to you."


class SessionActionPermission(BasePermission):
    """DRF's object check for a view acting on a session, one of its jobs or runs: who may
    take the view's action (``SessionActionApi.actions``), as the one decision says
    (``permissions.action_refusal``, its access part). Whether the action may happen now
    is asked again by the service, on the locked rows."""

    def has_object_permission(self, request: Request, view: APIView, obj: Any) -> bool:
        action = getattr(view, "actions", {}).get(request.method or "")
        if action is None:
            return True
        session = obj if isinstance(obj, AgentSession) else obj.session
        refusal = action_refusal(
            action,
            session=session,
            user=request.user,
            run=obj if isinstance(obj, Run) else None,
            access_only=True,
        )
        if refusal is not None:
            raise refusal
        return True


class SessionActionApi(APIView):
    """An API view that changes a session (its role, plan, changes, jobs, branch or runs):
    ``actions`` names the action each method takes. A test enumerates these views against
    every run state (tests/sessions_app/test_action_guard.py)."""

    permission_classes = [IsAuthenticated, SessionActionPermission]
    actions: ClassVar[dict[str, SessionAction]] = {}


def check_session_access(
    user: Any, session: AgentSession | None, *, view: APIView | None = None, request: Any = None
) -> AgentSession:
    """The session if the user may see it; 404 otherwise. With ``view`` (and its
    ``request``), also whether the user may take the view's action (403 otherwise)."""
    if session is None or not session_can_view(user, session):
        raise NotFound(NOT_VISIBLE)
    if view is not None:
        view.check_object_permissions(request, session)
    return session


def session_for(request: Request, pk: Any, *, view: APIView | None = None) -> AgentSession:
    """The session if visible (404 otherwise); with ``view``, may the user act (403)."""
    session = AgentSession.objects.select_related("owner").filter(pk=pk).first()
    return check_session_access(request_user(request), session, view=view, request=request)


def job_for(request: Request, pk: Any, *, view: APIView | None = None) -> Job:
    """The job if visible (404 otherwise); with ``view``, may the user act (403)."""
    job = jobs_visible_to(request_user(request)).filter(pk=pk).first()
    if job is None:
        raise NotFound("No job with that id is visible to you.")
    if view is not None:
        view.check_object_permissions(request, job)
    return job
