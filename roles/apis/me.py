"""Who the caller is."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class MeOutput(serializers.Serializer):
    username = serializers.CharField()
    is_staff = serializers.BooleanField()


class MeApi(APIView):
    """Who the caller is; also the trivial authenticated endpoint benchmarks compare against."""

    @extend_schema(responses=MeOutput, operation_id="me_retrieve")
    def get(self, request: Request) -> Response:
        user: Any = request.user
        return Response({"username": user.get_username(), "is_staff": bool(user.is_staff)})
