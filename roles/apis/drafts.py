"""/api/role-drafts/: drafts of protected roles, and publishing or rejecting one.

Reading needs a signed-in user (like roles); publishing and rejecting are decided by
``roles.services.draft_review`` (ACODE-ROL-010 own draft, ACODE-ROL-011 no permission,
ACODE-ROL-012 stale, ACODE-ROL-013 not open)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import AcodeError, error_responses
from acode.inputs import Input, Query, Text, body_of, query_of
from roles import selectors
from roles.models import RoleDraft, RoleDraftStatus
from roles.services import role_draft_is_stale, role_draft_publish, role_draft_reject
from roles.services.draft_review import role_draft_replay_report

DRAFT_ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The draft's id.")
DECISION_CODES = ("ACODE-API-404", "ACODE-ROL-010", "ACODE-ROL-011", "ACODE-ROL-013")


# Not JSONField(allow_null=True): its schema, oneOf [{}, null], refuses null (both match).
@extend_schema_field({"description": "Any JSON value, null included."})
class AnyValue(serializers.JSONField):
    """Any JSON value."""


class FieldChangeOutput(serializers.Serializer):
    field = serializers.CharField()
    before = AnyValue()
    after = AnyValue()


class RoleDraftOutput(serializers.Serializer):
    id = serializers.IntegerField()
    role = serializers.CharField(help_text="The role's slug.")
    base_version = serializers.IntegerField(help_text="The role version it was made on.")
    status = serializers.ChoiceField(choices=RoleDraftStatus.values)
    stale = serializers.BooleanField(help_text="The role has a newer version: cannot publish.")
    author = serializers.CharField()
    created_at = serializers.DateTimeField()
    decided_by = serializers.CharField()
    decided_at = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField()
    diff = FieldChangeOutput(many=True)
    example_results = serializers.ListField(child=serializers.DictField())
    content = serializers.DictField(help_text="The role's full proposed content.")
    replay = serializers.DictField(
        allow_null=True,
        help_text="The open draft replayed against the role's recorded decisions of the last "
        "ACODE_DRAFT_REPLAY_DAYS days (detail only, for users who may change roles; else null).",
    )


def draft_data(draft: RoleDraft, *, replay: bool = False) -> dict[str, Any]:
    """A draft as the API shows it; its replay (the detail, for role admins: it names audit
    rows of every session) only when ``replay``."""
    return RoleDraftOutput(
        {
            "id": draft.pk,
            "role": draft.role_slug,
            "base_version": draft.base_number,
            "status": draft.status,
            "stale": draft.status == RoleDraftStatus.OPEN and role_draft_is_stale(draft),
            "author": draft.author_name,
            "created_at": draft.created_at,
            "decided_by": draft.decided_by_name,
            "decided_at": draft.decided_at,
            "reason": draft.reason,
            "diff": draft.diff,
            "example_results": draft.example_results,
            "content": draft.content,
            "replay": role_draft_replay_report(draft) if replay else None,
        }
    ).data


class DraftQuery(Query):
    status = serializers.ChoiceField(
        choices=RoleDraftStatus.values, required=False, help_text="Only drafts in this status."
    )
    role = Text(max_length=64, required=False, help_text="Only drafts of this role (slug).")


class DraftDecisionInput(Input):
    reason = Text(max_length=2000, required=False, allow_blank=True, default="")


def _draft(pk: int) -> RoleDraft:
    draft = selectors.role_draft(pk)
    if draft is None:
        raise AcodeError("ACODE-API-404", f"No role draft #{pk}.", {"draft": pk})
    return draft


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
        replay = request.user.has_perm("roles.change_role")
        return Response(draft_data(_draft(pk), replay=replay))


def _decide(request: Request, pk: int, decision: Callable[..., RoleDraft]) -> Response:
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
