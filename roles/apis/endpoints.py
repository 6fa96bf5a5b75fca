"""/api/model-endpoints/: the models roles route to, and a probe of one."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.permissions import DjangoModelPermissions, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from acode.llm import Endpoint, model_check
from roles import selectors


class ModelEndpointPermission(DjangoModelPermissions):
    """Model endpoints are admin data: reading needs ``view_modelendpoint``, checking one
    (which sends it a request) ``change_modelendpoint``, as in admin."""

    perms_map = {
        **DjangoModelPermissions.perms_map,
        "GET": ["%(app_label)s.view_%(model_name)s"],
        "POST": ["%(app_label)s.change_%(model_name)s"],
    }


class ModelEndpointOutput(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.CharField()
    model = serializers.CharField()
    base_url = serializers.CharField()
    context_window = serializers.IntegerField()
    supports_json_schema = serializers.BooleanField()
    schema_format = serializers.CharField()
    enabled = serializers.BooleanField()


class ModelCheckOutput(serializers.Serializer):
    endpoint = serializers.CharField()
    model = serializers.CharField()
    base_url = serializers.CharField()
    constrained = serializers.BooleanField(help_text="Answers constrained by a JSON schema.")
    reachable = serializers.BooleanField()
    can_call_tools = serializers.BooleanField()
    seconds = serializers.FloatField(help_text="How long the probe took.")
    tokens_out = serializers.IntegerField()
    context_window = serializers.IntegerField(
        allow_null=True, help_text="What the server reports (null: it does not say)."
    )
    configured_context_window = serializers.IntegerField()
    answer = serializers.CharField(help_text="The model's tool call, or its text.")
    message = serializers.CharField(help_text="The verdict, in words.")


def _endpoint_named(name: str) -> Endpoint:
    """An endpoint by name; ``default`` is the settings' endpoint unless a row has the name.
    A name no row has is 404; a disabled endpoint is ACODE-LLM-001."""
    exists = selectors.model_endpoint_exists(name)
    if name == "default" and not exists:
        return selectors.endpoint_for("")
    if not exists:
        raise NotFound(f"No model endpoint is named {name!r}.")
    return selectors.endpoint_for(name)


class ModelEndpointListApi(APIView):
    permission_classes = [IsAuthenticated, ModelEndpointPermission]
    queryset = selectors.model_endpoints_all().none()

    @extend_schema(
        responses={200: ModelEndpointOutput(many=True), **error_responses("ACODE-API-403")},
        operation_id="model_endpoints_list",
    )
    def get(self, request: Request) -> Response:
        default = selectors.endpoint_for("")
        rows = [
            {**asdict(default), "enabled": True},
            *selectors.model_endpoint_values(ModelEndpointOutput().fields),
        ]
        return Response(ModelEndpointOutput(rows, many=True).data)


class ModelEndpointCheckApi(APIView):
    permission_classes = [IsAuthenticated, ModelEndpointPermission]
    queryset = selectors.model_endpoints_all().none()

    @extend_schema(
        request=None,
        responses={200: ModelCheckOutput, **error_responses("ACODE-LLM-001", "ACODE-LLM-003")},
        operation_id="model_endpoints_check",
        description="Send the endpoint one tool-call probe, as a job would: can the model "
        "call tools, how fast, and with what context window (`default`: the settings' "
        "endpoint).",
    )
    def post(self, request: Request, name: str) -> Response:
        return Response(ModelCheckOutput(asdict(model_check(_endpoint_named(name)))).data)
