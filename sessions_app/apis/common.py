"""What every sessions API view shares: who is asking, which session, documented errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar, cast

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from acode.errors import error_responses
from sessions_app.permissions import SessionAction, session_for

T = TypeVar("T")
# permissions.session_for, run_for or job_for: the object, or the one refusal.
Access = Callable[[User, Any, SessionAction], T]

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


class SessionActionApi(APIView):
    """An API view on one session, one of its jobs or one of its runs: ``actions`` names the
    action each method that changes it takes (the others read: ``SessionAction.VIEW``).
    A test enumerates the changing ones against every run state
    (tests/sessions_app/test_action_guard.py).

    A method fetches and checks in one call (``self.access(request, session_for, pk)``):
    404 when there is none or the user may not see it, 403 when they may not take the
    method's action. Whether the action may happen now is asked by the service, on the
    locked rows."""

    permission_classes = [IsAuthenticated]
    actions: ClassVar[dict[str, SessionAction]] = {}

    def access(self, request: Request, find: Access[T], pk: Any) -> T:
        """``find`` (``permissions.session_for``, ``run_for`` or ``job_for``) asked for
        ``pk`` by the user making the request, for this method's action."""
        action = self.actions.get(request.method or "", SessionAction.VIEW)
        return find(request_user(request), pk, action)


# What a session holds, listed (its transitions, consents, delivered commits): the session
# fetched and checked for sight, then ``listed`` (a selector) of it, each shown by
# ``output``. No docstring: a view without a description of its own is documented in the
# schema by the nearest docstring, which stays SessionActionApi's.
class SessionItemsApi(SessionActionApi):
    output: ClassVar[type[Serializer[Any]]]
    listed: ClassVar[Callable[[Any], Any]]

    def get(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)
        return Response(self.output(type(self).listed(session), many=True).data)


ItemsView = TypeVar("ItemsView", bound=type[SessionItemsApi])


def session_items(
    *, operation_id: str, description: str | None = None
) -> Callable[[ItemsView], ItemsView]:
    """The schema of a ``SessionItemsApi``: its ``output``, many; 404 for a session the
    caller may not see."""

    def schema(view: ItemsView) -> ItemsView:
        return extend_schema_view(
            get=extend_schema(
                responses={200: view.output(many=True), **error_responses(*NOT_VISIBLE_CODES)},
                operation_id=operation_id,
                description=description,
            )
        )(view)

    return schema
