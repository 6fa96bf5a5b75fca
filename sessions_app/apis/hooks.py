"""Outside agents' hooks: Claude Code's HTTP hooks, the ``acode hook codex`` shim and any
other agent post their events to ``/api/hooks/{agent}/`` with a hook token; and the hook
tokens themselves (``/api/hook-tokens/``).

The answer is the one the agent reads: Claude Code's ``hookSpecificOutput`` (a
``permissionDecision`` of allow, deny or ask with its reason, for ``PreToolUse``; a
``decision.behavior`` for ``PermissionRequest``); every other agent gets the same and an
``acode`` object (outcome, rule, reason, session), which the Codex shim turns into exit
status 2. A malformed event is a 4xx, which an agent set up to fail closed blocks on.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from acode.inputs import Input, Text
from roles.middleware import syncs_registry_itself
from sessions_app.apis.common import INVALID_CODES, request_user
from sessions_app.selectors.outside import hook_tokens_of
from sessions_app.services.outside.hooks import MALFORMED, HookAnswer, hook_event
from sessions_app.services.outside.tokens import (
    hook_token_create,
    hook_token_of,
    hook_token_revoke,
    hook_token_user,
    is_hook_token,
)

AGENT_PATTERN = r"[a-z0-9][a-z0-9-]{0,39}"


class HookTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer acodehk_...``: a hook token, accepted by the hook route only."""

    keyword = b"bearer"

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None
        if len(parts) != 2:
            raise AuthenticationFailed("A hook token is one word after 'Bearer'.")
        token = hook_token_user(parts[1].decode("latin-1"))
        if token is None:
            raise AuthenticationFailed("Invalid or revoked hook token.")
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"


class HasHookToken(BasePermission):
    """Only a hook token opens the hook route (a login or an API token does not)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return is_hook_token(request.auth)


class HookTokenScheme(OpenApiAuthenticationExtension):
    target_class = HookTokenAuthentication
    name = "hookToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "A hook token (acodehk_...)."}


class HookEventInput(serializers.Serializer):
    """The fields acode reads; any other field is accepted and recorded by name."""

    hook_event_name = serializers.CharField(max_length=64)
    session_id = serializers.CharField(max_length=200)
    cwd = serializers.CharField(
        max_length=1000, help_text="Absolute: the project root on the first event."
    )
    tool_name = serializers.CharField(max_length=200, required=False)
    tool_input = serializers.JSONField(required=False)
    tool_use_id = serializers.CharField(required=False)
    tool_response = serializers.JSONField(required=False)


HookEventOutput = inline_serializer(
    "HookEventOutput",
    {
        "hookSpecificOutput": serializers.JSONField(
            required=False, help_text="Claude Code's answer: permissionDecision and its reason."
        ),
        "acode": serializers.JSONField(
            required=False, help_text="outcome (allow, ask, deny or empty), rule, reason, session."
        ),
    },
)


def hook_response(agent: str, answer: HookAnswer) -> dict[str, Any]:
    """The answer in the agent's words."""
    body: dict[str, Any] = {}
    if answer.outcome and answer.event == "PermissionRequest":
        if answer.outcome != "ask":  # ask: the agent asks its user, as it would anyway
            behavior = {"behavior": answer.outcome, "message": answer.reason}
            body["hookSpecificOutput"] = {"hookEventName": answer.event, "decision": behavior}
    elif answer.outcome:
        body["hookSpecificOutput"] = {
            "hookEventName": "PreToolUse",
            "permissionDecision": answer.outcome,
            "permissionDecisionReason": answer.reason,
        }
    if agent != "claude-code":
        body["acode"] = {"outcome": answer.outcome, "rule": answer.rule, "reason": answer.reason,
                         "session": answer.session, "calls": answer.calls}  # fmt: skip
    return body


@syncs_registry_itself  # from the stamp read with the session (outside.sessions)
class HookEventApi(APIView):
    authentication_classes = [HookTokenAuthentication]
    permission_classes = [IsAuthenticated, HasHookToken]

    @extend_schema(
        request=HookEventInput,
        responses={
            200: HookEventOutput,
            **error_responses("ACODE-API-401", MALFORMED, *INVALID_CODES),
        },
        operation_id="hooks_event",
        description="One hook event of an outside agent ({agent}: claude-code, codex or any "
        "other name), as Claude Code's HTTP hooks send it. The first event of an agent's "
        "session creates its acode session (in the hook token's role, else the default). "
        "A tool call is decided by the session's current role and audited before the "
        "answer; PostToolUse records the outcome; any other event is recorded. Hook "
        "tokens only (Authorization: Bearer acodehk_...).",
    )
    def post(self, request: Request, agent: str) -> Response:
        answer = hook_event(
            token=hook_token_of(request.auth), agent=agent, event=request.data,
            machine=request.headers.get("X-Acode-Machine", ""),
            repository=request.headers.get("X-Acode-Repository", ""),
        )  # fmt: skip
        return Response(hook_response(agent, answer))


class HookTokenInput(Input):
    name = Text(max_length=100, required=False, allow_blank=True, default="",
                help_text="What the token is for (a machine, an agent).")  # fmt: skip
    role = Text(max_length=100, required=False, allow_blank=True, default="",
                help_text="The role new sessions start in (default: the default role).")  # fmt: skip


class HookTokenOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField(source="label")
    role = serializers.CharField(source="role.slug", default="", allow_null=True)
    prefix = serializers.CharField()
    created_at = serializers.DateTimeField()


class HookTokenCreated(HookTokenOutput):
    key = serializers.CharField(help_text="The token: shown only in this answer.")


class HookTokenListApi(APIView):
    @extend_schema(responses={200: HookTokenOutput(many=True)}, operation_id="hook_tokens_list",
                   description="Your hook tokens (their keys are not kept).")  # fmt: skip
    def get(self, request: Request) -> Response:
        return Response(HookTokenOutput(hook_tokens_of(request_user(request)), many=True).data)

    @extend_schema(
        request=HookTokenInput,
        responses={201: HookTokenCreated, **error_responses(*INVALID_CODES, "ACODE-ROL-001")},
        operation_id="hook_tokens_create",
        description="A hook token of yours: it authenticates your outside agents' hooks "
        "(/api/hooks/{agent}/) and nothing else.",
    )
    def post(self, request: Request) -> Response:
        data = HookTokenInput(data=request.data)
        data.is_valid(raise_exception=True)
        given = data.validated_data
        token, key = hook_token_create(
            user=request_user(request), label=given["name"], role=given["role"]
        )
        return Response({**HookTokenOutput(token).data, "key": key}, status=201)


class HookTokenApi(APIView):
    @extend_schema(responses={204: None, **error_responses("ACODE-HOK-002")},
                   operation_id="hook_tokens_revoke", description="Revoke one of your hook tokens.")  # fmt: skip
    def delete(self, request: Request, token_id: str) -> Response:
        hook_token_revoke(user=request_user(request), token_id=token_id)
        return Response(status=204)
