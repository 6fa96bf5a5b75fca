"""Tool calls a rule puts to a person: list a session's, and answer one."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from acode.errors import error_responses
from acode.inputs import Input, Text
from sessions_app.apis.common import (
    ACT_CODES,
    INVALID_CODES,
    NOT_VISIBLE_CODES,
    SessionActionApi,
    request_user,
)
from sessions_app.permissions import SessionAction, session_for
from sessions_app.selectors.consents import session_consents
from sessions_app.services.consents import CONSENT_CLOSED, tool_consent_answer


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


class ConsentAnswerInput(Input):
    allow = serializers.BooleanField(help_text="true: the call runs; false: it is refused.")
    note = Text(max_length=2000, required=False, allow_blank=True, default="")


class SessionConsentsApi(SessionActionApi):
    @extend_schema(
        responses={200: ConsentOutput(many=True), **error_responses(*NOT_VISIBLE_CODES)},
        operation_id="sessions_consents_list",
        description="The session's tool calls put to a person (a command rule with "
        '"outcome": "ask"): the 20 most recent, those waiting first.',
    )
    def get(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)
        return Response(ConsentOutput(session_consents(session), many=True).data)


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
        data = ConsentAnswerInput(data=request.data)
        data.is_valid(raise_exception=True)
        consent = tool_consent_answer(
            consent_id=consent_id, session=session, user=request_user(request),
            allow=data.validated_data["allow"], note=data.validated_data["note"],
        )  # fmt: skip
        return Response(ConsentOutput(consent).data)
