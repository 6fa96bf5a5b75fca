"""/api/roles/{name}/check/: would this role be allowed this call? The executor's decision
(``roles.decision.decide``) on the role as it is now, with nothing run and nothing written:
a tool the role lacks gets the denial a job's model gets (the spec's text, its constraint
and the suggestion of a role to transition to)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from acode.inputs import JSON_VALUE_REF, NO_NUL, Input, body_of
from roles.apis.roles import ROLE_NAME
from roles.commands.workspace import KnownWorkspace
from roles.decision import HostFacts, decide
from roles.registry import registry


@extend_schema_field(
    {"type": "object", "propertyNames": {"pattern": NO_NUL}, "additionalProperties": JSON_VALUE_REF}
)
class Arguments(serializers.DictField):
    """A call's arguments: a JSON object whose keys hold no NUL (``Input`` refuses one)."""


class ToolCheckInput(Input):
    tool = serializers.CharField(max_length=200)
    arguments = Arguments(required=False, help_text="The call's arguments (default: none).")


class ToolCheckOutput(serializers.Serializer):
    role = serializers.CharField(help_text="The role's name.")
    tool = serializers.CharField()
    outcome = serializers.ChoiceField(choices=["allow", "ask", "deny"])
    allowed = serializers.BooleanField()
    code = serializers.CharField(help_text="The refusal's ACODE code ('' when allowed).")
    rule = serializers.CharField(help_text="The rule that decided.")
    reason = serializers.CharField(
        help_text="Why not: for a tool the role lacks, the denial a job's model gets."
    )
    suggestion = serializers.CharField(
        help_text="For a tool the role lacks: the role to transition to, or whom to ask."
    )


class RoleToolCheckApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=ToolCheckInput,
        responses={200: ToolCheckOutput, **error_responses("ACODE-ROL-001")},
        parameters=[ROLE_NAME],
        operation_id="roles_check",
        description="Decide a call as the executor would, without running it: on a host "
        "that can sandbox commands, in a workspace without links (a job's own workspace "
        "and host may refuse more). Reads role data only, as GET /api/roles/{name}/ does.",
    )
    def post(self, request: Request, name: str) -> Response:
        body = body_of(ToolCheckInput, request)
        role = registry.get(name)
        tool = body["tool"]
        decision = decide(
            role,
            tool,
            body.get("arguments", {}),
            host=HostFacts(),
            workspace=KnownWorkspace(),
        )
        data = {
            "role": role.name,
            "tool": tool,
            "outcome": decision.outcome,
            "allowed": decision.allowed,
            "code": decision.code,
            "rule": decision.rule,
            "reason": decision.reason,
            "suggestion": decision.suggestion,
        }
        return Response(ToolCheckOutput(data).data)
