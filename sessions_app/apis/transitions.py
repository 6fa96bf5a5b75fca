"""Role transitions: change the role, list the transitions allowed now."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from acode.errors import error_responses
from acode.inputs import body_of
from acode.middleware import request_id_of
from roles.registry import registry
from sessions_app.apis.common import (
    ACT_CODES,
    IDEMPOTENCY,
    INVALID_CODES,
    NOT_VISIBLE_CODES,
    REQUEST_ID,
    RUN_OWNS,
    SessionActionApi,
    request_user,
)
from sessions_app.apis.idempotency import idempotent
from sessions_app.apis.serializers import (
    AllowedTransitionOutput,
    SessionOutput,
    TransitionInput,
    TransitionOutput,
    TransitionResultOutput,
)
from sessions_app.permissions import SessionAction, not_visible, session_for
from sessions_app.selectors.lookups import SessionNotFound
from sessions_app.services.transitions import session_transition, transitions_from


class SessionTransitionApi(SessionActionApi):
    actions = {"POST": SessionAction.TRANSITION}

    @extend_schema(
        request=TransitionInput,
        responses={
            200: TransitionResultOutput,
            **error_responses(
                *ACT_CODES,
                *INVALID_CODES,
                "ACODE-ROL-001",
                "ACODE-ROL-007",
                "ACODE-ROL-002",
                "ACODE-ROL-006",
                RUN_OWNS,
            ),
        },
        parameters=[IDEMPOTENCY, REQUEST_ID],
        operation_id="sessions_transition",
        description="Change the session's role. The only way a role changes; refused "
        "transitions answer 409 ACODE-ROL-002 with the transitions allowed now.",
    )
    def post(self, request: Request, pk: str) -> Response:
        user = request_user(request)

        def transition() -> Response:
            data = body_of(TransitionInput, request)
            try:
                # Who may is asked by the service on the locked row (``access_refusal``,
                # as ``session_for`` would), so the lock is the only read.
                result = session_transition(
                    session=pk,
                    to_role=data["to_role"],
                    reason=data["reason"],
                    user=user,
                    expected_role=data.get("expected_role") or None,
                    request_id=request_id_of(request),
                )
            except SessionNotFound:
                raise not_visible("session") from None
            return Response(
                {
                    "changed": result.changed,
                    "message": result.message,
                    "transition": TransitionOutput(result.transition).data
                    if result.transition
                    else None,
                    "session": SessionOutput(result.session).data,
                    "available_permissions": sorted(
                        registry.by_id(result.session.current_role_id).access.permissions
                    ),
                }
            )

        return idempotent(request, transition)


class SessionTransitionsAllowedApi(SessionActionApi):
    @extend_schema(
        responses={
            200: AllowedTransitionOutput(many=True),
            **error_responses(*NOT_VISIBLE_CODES),
        },
        operation_id="sessions_transitions_allowed",
    )
    def get(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)
        return Response([t.as_dict() for t in transitions_from(session)])
