"""/api/roles/test/: run policy examples, of the stored roles (GET) or of a YAML document
(POST). Nothing is written either way."""

from __future__ import annotations

import copy

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from roles.apis.parsers import PlainTextParser
from roles.apis.portability import IMPORT_CODES
from roles.portability.document import DOCUMENT_SCHEMA, load_yaml
from roles.portability.examples import policy_report, policy_test


class ExampleResultOutput(serializers.Serializer):
    role = serializers.CharField()
    example = serializers.CharField(help_text="Where it is stored: examples[0], ...")
    name = serializers.CharField()
    call = serializers.CharField()
    expect = serializers.ChoiceField(choices=["allow", "ask", "deny"])
    why = serializers.CharField()
    decision = serializers.ChoiceField(choices=["allow", "ask", "deny"])
    rule = serializers.CharField(help_text="The rule that decided.")
    reason = serializers.CharField()
    passed = serializers.BooleanField()


class PolicyTestOutput(serializers.Serializer):
    passed = serializers.BooleanField()
    examples = serializers.IntegerField()
    failed = serializers.IntegerField()
    results = ExampleResultOutput(many=True)


class RoleTestApi(APIView):
    """Decide every example with the executor's decision; write nothing."""

    permission_classes = [IsAuthenticated]
    parser_classes = [PlainTextParser]

    @extend_schema(
        responses={200: PolicyTestOutput},
        description="Run the policy examples of the stored roles. The answer lists every "
        "example with the decision it got and the rule that decided; `passed` is false "
        "when one fails.",
        operation_id="roles_test_stored",
    )
    def get(self, request: Request) -> Response:
        return Response(policy_report(policy_test(None)))

    @extend_schema(
        request={"application/yaml": copy.deepcopy(DOCUMENT_SCHEMA)},
        responses={200: PolicyTestOutput, **error_responses(*IMPORT_CODES)},
        description="Run the policy examples of a roles document (a body like GET "
        "/api/roles/export/ gives; its roles over the stored ones) before importing it. "
        "The answer lists every example with the decision it got and the rule that "
        "decided; `passed` is false when one fails. Nothing is written.",
        operation_id="roles_test",
    )
    def post(self, request: Request) -> Response:
        return Response(policy_report(policy_test(load_yaml(str(request.data)))))
