"""Token login for API clients and the CLI: exchange a username and password for a token."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import Throttled
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import AcodeError, error_responses
from acode.inputs import Input
from acode.ratelimit import login_retry_after


class TokenInput(Input):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(
        max_length=1024, trim_whitespace=False, style={"input_type": "password"}
    )


class TokenOutput(serializers.Serializer):
    token = serializers.CharField()
    username = serializers.CharField()


class TokenApi(APIView):
    """``POST`` logs in (no authentication needed; rate-limited); ``DELETE`` revokes the token."""

    def get_permissions(self) -> list[Any]:
        return [AllowAny()] if self.request.method == "POST" else [IsAuthenticated()]

    def get_authenticators(self) -> list[Any]:
        if self.request is not None and self.request.method == "POST":
            return []  # a stale token in the header must not block logging in again
        return super().get_authenticators()

    @extend_schema(
        request=TokenInput,
        responses={
            200: TokenOutput,
            **error_responses("ACODE-API-400", "ACODE-API-401", "ACODE-API-429"),
        },
        auth=[],
        operation_id="auth_token_create",
    )
    def post(self, request: Request) -> Response:
        body = request.data
        # Counted before validation, so malformed attempts spend the address's budget too;
        # the same limit as the login pages (acode/ratelimit.py).
        username = body.get("username") if isinstance(body, dict) else None
        retry_after = login_retry_after(
            request._request, username=username if isinstance(username, str) else ""
        )
        if retry_after is not None:
            # DRF's Throttled: 429 ACODE-API-429 with a Retry-After header.
            raise Throttled(wait=retry_after, detail="Too many login attempts.")
        data = TokenInput(data=body)
        data.is_valid(raise_exception=True)
        user = authenticate(
            request._request,
            username=data.validated_data["username"],
            password=data.validated_data["password"],
        )
        if user is None or not user.is_active:
            raise AcodeError(
                "ACODE-API-401", "Unable to log in with the given username and password.", {}
            )
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key, "username": user.get_username()})

    @extend_schema(
        request=None,
        responses={204: None, **error_responses("ACODE-API-401")},
        operation_id="auth_token_destroy",
    )
    def delete(self, request: Request) -> Response:
        Token.objects.filter(user_id=cast(int, request.user.pk)).delete()
        return Response(status=204)
