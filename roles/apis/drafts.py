"""/api/role-drafts/: drafts of protected roles, and publishing or rejecting one.

Reading needs a signed-in user (like roles); publishing and rejecting are decided by
``roles.services.draft_review`` (ACODE-ROL-010 own draft, ACODE-ROL-011 no permission,
ACODE-ROL-012 stale, ACODE-ROL-013 not open)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from acode.inputs import Input, Text, body_of, query_of
from roles import selectors
from roles.serializers import DraftQuery, RoleDraftOutput, draft_data
from roles.services import role_draft_publish, role_draft_reject
from roles.services.draft_review import role_draft_replay_report

DRAFT_ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The draft's id.")
DECISION_CODES = ("ACODE-API-404", "ACODE-ROL-010", "ACODE-ROL-011", "ACODE-ROL-013")


class DraftDecisionInput(Input):
    reason = Text(max_length=2000, required=False, allow_blank=True, default="")


class RoleDraftListApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[DraftQuery],
        responses={200: RoleDraftOutput(many=True)},
        operation_id="role_drafts_list",
        description="Drafts of protected roles, newest first.",
    )
    def get(self, request: Request) -> Response:
        query = query_of(DraftQuery, request)
        drafts = selectors.role_drafts(status=query.get("status"), role=query.get("role"))
        return Response([draft_data(d) for d in drafts])


class RoleDraftDetailApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[DRAFT_ID],
        responses={200: RoleDraftOutput, **error_responses("ACODE-API-404")},
        operation_id="role_drafts_retrieve",
    )
    def get(self, request: Request, pk: int) -> Response:
        draft = selectors.role_draft_row(pk)
        # The replay names audit rows of every session: for users who may change roles.
        replayed = request.user.has_perm("roles.change_role")
        replay = role_draft_replay_report(draft) if replayed else None
        return Response(draft_data(draft, replay=replay))


def _decide(request: Request, pk: int, decision: Callable[..., Any]) -> Response:
    """Publish or reject (``decision``), by the requesting user with the body's reason."""
    data = body_of(DraftDecisionInput, request)
    draft = decision(draft_id=pk, user=request.user, reason=data["reason"])
    return Response(draft_data(draft))


class RoleDraftPublishApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[DRAFT_ID],
        request=DraftDecisionInput,
        responses={
            200: RoleDraftOutput,
            **error_responses(*DECISION_CODES, "ACODE-ROL-012", "ACODE-ROL-008"),
        },
        operation_id="role_drafts_publish",
        description="Apply the draft to its role (a new role version). Needs "
        "roles.publish_roledraft, and another admin than its author.",
    )
    def post(self, request: Request, pk: int) -> Response:
        return _decide(request, pk, role_draft_publish)


class RoleDraftRejectApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[DRAFT_ID],
        request=DraftDecisionInput,
        responses={200: RoleDraftOutput, **error_responses(*DECISION_CODES)},
        operation_id="role_drafts_reject",
        description="Close the draft without applying it. Needs roles.publish_roledraft, "
        "unless it is your own draft (withdrawing it).",
    )
    def post(self, request: Request, pk: int) -> Response:
        return _decide(request, pk, role_draft_reject)
