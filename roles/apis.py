"""REST API for roles, tools and transition rules (reads come from the registry)."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from roles.prompts import compose_prompt
from roles.registry import registry
from roles.serializers import (
    ComposedPromptOutput,
    RoleDetailOutput,
    RoleOutput,
    RuleOutput,
    ToolOutput,
    rule_data,
    tool_data,
)


class RoleListApi(APIView):
    @extend_schema(responses=RoleOutput(many=True), operation_id="roles_list")
    def get(self, request: Request) -> Response:
        return Response(RoleOutput(registry.list_roles(), many=True).data)


class RoleDetailApi(APIView):
    @extend_schema(responses=RoleDetailOutput, operation_id="roles_retrieve")
    def get(self, request: Request, name: str) -> Response:
        return Response(RoleDetailOutput(registry.get(name)).data)


class RolePromptApi(APIView):
    @extend_schema(
        responses=ComposedPromptOutput,
        parameters=[
            OpenApiParameter("pack", str, description="Prompt pack (default: active pack)")
        ],
        operation_id="roles_prompt",
    )
    def get(self, request: Request, name: str) -> Response:
        composed = compose_prompt(name, pack=request.query_params.get("pack") or None)
        return Response(asdict(composed))


class ToolListApi(APIView):
    @extend_schema(responses=ToolOutput(many=True), operation_id="tools_list")
    def get(self, request: Request) -> Response:
        return Response([tool_data(t) for t in registry.tools()])


class TransitionRuleListApi(APIView):
    @extend_schema(responses=RuleOutput(many=True), operation_id="transition_rules_list")
    def get(self, request: Request) -> Response:
        return Response([rule_data(r) for r in registry.all_rules()])
