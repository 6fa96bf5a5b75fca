"""/api/agents/: custom agents (issue 41). Any signed-in user lists the agents they made
(admins who may view roles: every one, with who made it); creating one needs
``roles.configure`` (ACODE-ROL-017 otherwise; superusers hold it). A custom agent is a role
(``/api/roles/{slug}/``) that never holds write, execute or network permissions
(ACODE-ROL-016 on any write that tries)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from acode.inputs import Input, Text, body_of
from roles.registry import registry
from roles.services.agents import (
    custom_agent_create,
    custom_agent_delete,
    custom_agents_visible_to,
)


class CustomAgentInput(Input):
    name = Text(max_length=100, help_text="The agent's (role's) name.")
    slug = serializers.RegexField(
        r"^[-a-zA-Z0-9_]+$", max_length=64, required=False, help_text="Default: from the name."
    )
    template = Text(max_length=100, help_text="The role it is made from (slug or name).")
    description = Text(max_length=2000, required=False, allow_blank=True)
    goals = serializers.ListField(child=Text(max_length=500), min_length=1, max_length=20)
    checklist = serializers.ListField(child=Text(max_length=500), min_length=1, max_length=50)
    routing_keywords = serializers.ListField(
        child=Text(max_length=100), max_length=50, required=False
    )
    prompt = Text(
        max_length=20_000, required=False, allow_blank=True,
        help_text="What the agent is and does; empty: the template's prompt.",
    )  # fmt: skip


class CustomAgentOutput(serializers.Serializer):
    role = serializers.CharField(source="role.slug")
    name = serializers.CharField(source="role.name")
    template = serializers.CharField(source="template_slug")
    created_by = serializers.CharField(source="created_by_name")
    created_at = serializers.DateTimeField()
    routing_keywords = serializers.ListField(child=serializers.CharField())
    goals = serializers.ListField(child=serializers.CharField(), source="role.capabilities")
    checklist = serializers.ListField(child=serializers.CharField(), source="role.constraints")
    effective_permissions = serializers.SerializerMethodField()
    effective_tools = serializers.SerializerMethodField()

    def get_effective_permissions(self, obj: Any) -> list[str]:
        return sorted(registry.get(obj.role.slug).access.permissions)

    def get_effective_tools(self, obj: Any) -> list[str]:
        return list(registry.get(obj.role.slug).access.tools)


class CustomAgentCollectionApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses=CustomAgentOutput(many=True),
        operation_id="agents_list",
        description="Custom agents you made; admins who may view roles see every one.",
    )
    def get(self, request: Request) -> Response:
        return Response(CustomAgentOutput(custom_agents_visible_to(request.user), many=True).data)

    @extend_schema(
        request=CustomAgentInput,
        responses={
            201: CustomAgentOutput,
            **error_responses(
                "ACODE-ROL-017",
                "ACODE-ROL-001",
                "ACODE-API-409",
                "ACODE-PRM-001",
                "ACODE-ROL-004",
            ),
        },
        operation_id="agents_create",
        description="Create a custom agent from a role template. Needs the roles.configure "
        "permission (ACODE-ROL-017). The agent is a child role of the template holding its "
        "permissions except write, execute, network and configure, which a custom agent never "
        "holds (ACODE-ROL-016 on any later write that tries).",
    )
    def post(self, request: Request) -> Response:
        data = body_of(CustomAgentInput, request)
        agent = custom_agent_create(user=request.user, **data)  # type: ignore[arg-type]
        return Response(CustomAgentOutput(agent).data, status=201)


class CustomAgentDetailApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses={
            204: None,
            **error_responses("ACODE-ROL-001", "ACODE-API-403", "ACODE-ROL-005"),
        },
        operation_id="agents_delete",
        description="Delete a custom agent: the transition rules into and out of it, its own "
        "prompt and its role. Its maker (holding roles.configure) or an admin who may delete "
        "roles; an agent you cannot see is unknown (ACODE-ROL-001). Refused while sessions or "
        "jobs use it (ACODE-ROL-005), and then nothing is deleted.",
    )
    def delete(self, request: Request, role: str) -> Response:
        custom_agent_delete(user=request.user, slug=role)  # type: ignore[arg-type]
        return Response(status=204)
