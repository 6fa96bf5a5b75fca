"""Tool calls a rule puts to a person: list a session's, and answer one."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from acode.inputs import Input, Text, body_of
from sessions_app.apis.common import (
    ACT_CODES,
    INVALID_CODES,
    NOT_VISIBLE_CODES,
    SessionActionApi,
    SessionItemsApi,
    request_user,
    session_items,
)
from sessions_app.permissions import SessionAction, session_for
from sessions_app.selectors.consents import session_consents
from sessions_app.services.consents import CONSENT_CLOSED, tool_consent_answer
from sessions_app.services.memory import remembered_answer_revoke, remembered_answers_visible_to


class ConsentOutput(serializers.Serializer):
    id = serializers.UUIDField()
    job = serializers.UUIDField(source="job_id", allow_null=True)
    role = serializers.CharField(source="role_slug")
    tool = serializers.CharField()
    target = serializers.CharField(help_text="The command or path, as the audit shows it.")
    rule = serializers.CharField(help_text="The rule that asks for a person's consent.")
    reason = serializers.CharField()
    arguments = serializers.JSONField(help_text="The normalised arguments, redacted.")
    status = serializers.ChoiceField(
        choices=["pending", "allowed", "denied", "timed_out", "cancelled"]
    )
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    answered_at = serializers.DateTimeField(allow_null=True)
    answered_by = serializers.CharField(source="answered_by_name")
    note = serializers.CharField()
    answered_before = serializers.IntegerField(
        source="remembered_id",
        allow_null=True,
        help_text="The remembered answer that answered it (a person's earlier answer to the "
        "same call in this session and role), or null: answered now.",
    )


class RememberedAnswerOutput(serializers.Serializer):
    id = serializers.IntegerField()
    session = serializers.UUIDField(source="session_id")
    role = serializers.CharField(source="role_slug")
    tool = serializers.CharField()
    target = serializers.CharField()
    rule = serializers.CharField()
    allowed = serializers.BooleanField(allow_null=True, help_text="An ask's; null: a question.")
    question = serializers.CharField(help_text="A question's words (empty: an ask).")
    note = serializers.CharField(help_text="The note to an ask, or the question's answer.")
    answered_by = serializers.CharField(source="answered_by_name")
    created_at = serializers.DateTimeField()
    revoked_at = serializers.DateTimeField(allow_null=True)
    revoked_by = serializers.CharField(source="revoked_by_name")
    reuses = serializers.IntegerField(source="reuses.count", help_text="Asks it answered.")


class ConsentAnswerInput(Input):
    allow = serializers.BooleanField(help_text="true: the call runs; false: it is refused.")
    note = Text(max_length=2000, required=False, allow_blank=True, default="")


@session_items(
    operation_id="sessions_consents_list",
    description="The session's tool calls put to a person (a command rule with "
    '"outcome": "ask"): the 20 most recent, those waiting first.',
)
class SessionConsentsApi(SessionItemsApi):
    output = ConsentOutput
    listed = session_consents


class SessionConsentAnswerApi(SessionActionApi):
    actions = {"POST": SessionAction.CONSENT_ANSWER}

    @extend_schema(
        request=ConsentAnswerInput,
        responses={
            200: ConsentOutput,
            **error_responses(*ACT_CODES, *INVALID_CODES, CONSENT_CLOSED),
        },
        operation_id="sessions_consents_answer",
        description="Allow or refuse a call waiting for a person's consent: the session's "
        "owner, or someone allowed to act on every session, answers; the job goes on with "
        "the answer (allowed: the call runs and is audited; refused: the model is told).",
    )
    def post(self, request: Request, pk: str, consent_id: str) -> Response:
        session = self.access(request, session_for, pk)
        data = body_of(ConsentAnswerInput, request)
        consent = tool_consent_answer(
            consent_id=consent_id, session=session, user=request_user(request),
            allow=data["allow"], note=data["note"],
        )  # fmt: skip
        return Response(ConsentOutput(consent).data)


class SessionRememberedAnswersApi(SessionActionApi):
    @extend_schema(
        responses={200: RememberedAnswerOutput(many=True), **error_responses(*NOT_VISIBLE_CODES)},
        operation_id="sessions_remembered_answers_list",
        description="Decision memory: people's answers to this session's asks, each reused "
        "for the same call in the same role (revoked ones too, newest first). Whoever sees "
        "the session sees them.",
    )
    def get(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)
        answers = remembered_answers_visible_to(request_user(request)).filter(session=session)
        return Response(RememberedAnswerOutput(answers, many=True).data)


class RememberedAnswerRevokeApi(APIView):
    """Not a session action (``SessionActionApi``): an admin's, decided by the service."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=None,
        responses={
            200: RememberedAnswerOutput,
            **error_responses("ACODE-API-404", "ACODE-TOL-010"),
        },
        operation_id="remembered_answers_revoke",
        description="Revoke a remembered answer: the next such ask goes to a person again. "
        "Needs sessions_app.revoke_rememberedanswer (superusers hold it) and sight of the "
        "session (ACODE-API-404 otherwise).",
    )
    def post(self, request: Request, answer_id: int) -> Response:
        answer = remembered_answer_revoke(answer_id=answer_id, user=request_user(request))
        return Response(RememberedAnswerOutput(answer).data)
