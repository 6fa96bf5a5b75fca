"""/api/model-endpoints/: the models roles route to (and which roles do), adding or
changing one (PUT, as ``acode model add`` does), and a check of one (several probes)."""

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
from acode.inputs import Input, Query, body_of, query_of
from acode.llm import Endpoint, model_check
from acode.llm.check import MAX_PROBES, PROBES
from roles import selectors
from roles.registry import registry
from roles.services.endpoints import ENDPOINT_KINDS, model_endpoint_save


class ModelEndpointPermission(DjangoModelPermissions):
    """Model endpoints are admin data: reading needs ``view_modelendpoint``, checking one
    (which sends it a request) ``change_modelendpoint``, as in admin."""

    perms_map = {
        **DjangoModelPermissions.perms_map,
        "GET": ["%(app_label)s.view_%(model_name)s"],
        "POST": ["%(app_label)s.change_%(model_name)s"],
    }


class ModelUserOutput(serializers.Serializer):
    role = serializers.CharField(help_text="The role's name.")
    use = serializers.ChoiceField(
        choices=["preferred", "fallback"], help_text="As the role's preferred or fallback model."
    )


class ModelEndpointOutput(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.CharField(help_text="openai (an OpenAI-compatible server) or scripted.")
    model = serializers.CharField()
    base_url = serializers.CharField()
    context_window = serializers.IntegerField()
    supports_json_schema = serializers.BooleanField()
    schema_format = serializers.CharField()
    enabled = serializers.BooleanField()
    input_price = serializers.DecimalField(
        max_digits=12, decimal_places=4, allow_null=True, required=False,
        help_text="Price per million input tokens (null: none).",
    )  # fmt: skip
    output_price = serializers.DecimalField(
        max_digits=12, decimal_places=4, allow_null=True, required=False,
        help_text="Price per million output tokens (null: none).",
    )  # fmt: skip
    used_by = ModelUserOutput(
        many=True, required=False, help_text="The roles that route to it, and as what."
    )


ENDPOINT_FIELDS = (
    "name", "kind", "model", "base_url", "context_window", "supports_json_schema",
    "schema_format", "enabled", "input_price", "output_price",
)  # fmt: skip


class ModelEndpointInput(Input):
    """What a kind uses: ``openai`` a model (and a base URL, empty for the default server);
    ``scripted`` a script. What the kind does not use is cleared."""

    kind = serializers.ChoiceField(choices=ENDPOINT_KINDS, required=False)
    base_url = serializers.CharField(max_length=500, allow_blank=True, required=False)
    model = serializers.CharField(max_length=200, allow_blank=True, required=False)
    api_key_env = serializers.CharField(max_length=100, allow_blank=True, required=False)
    context_window = serializers.IntegerField(min_value=256, max_value=10_000_000, required=False)
    supports_json_schema = serializers.BooleanField(required=False)
    schema_format = serializers.ChoiceField(choices=["json_object", "json_schema"], required=False)
    script = serializers.JSONField(
        required=False, allow_null=True, help_text="Scripted kind: the steps to replay "
        "(README, Scripted model endpoints); null: none."
    )  # fmt: skip
    # 0 or more: the save refuses a negative price (ACODE-LLM-004), as admin's form does.
    input_price = serializers.DecimalField(
        max_digits=12, decimal_places=4, allow_null=True, required=False
    )
    output_price = serializers.DecimalField(
        max_digits=12, decimal_places=4, allow_null=True, required=False
    )
    enabled = serializers.BooleanField(required=False)


class ModelCheckQuery(Query):
    probes = serializers.IntegerField(
        min_value=1, max_value=MAX_PROBES, required=False,
        help_text=f"How many probes to send (default {PROBES}).",
    )  # fmt: skip


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
    probes = serializers.IntegerField(help_text="How many probes were sent.")
    tool_probes = serializers.IntegerField(
        help_text="In how many the model called the tool with usable arguments."
    )


def _model_users() -> dict[str, list[dict[str, str]]]:
    """Per endpoint name, the roles that route to it (``use``: preferred or fallback); a
    role naming no preferred model uses ``default``, the settings' endpoint."""
    users: dict[str, list[dict[str, str]]] = {}
    for role in registry.list_roles():
        for use, name in (("preferred", role.spec.preferred_model or "default"),
                          ("fallback", role.spec.fallback_model)):  # fmt: skip
            if name:
                users.setdefault(name, []).append({"role": role.name, "use": use})
    return users


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
        fields = [str(name) for name in ModelEndpointOutput().fields if name != "used_by"]
        rows = [
            {**asdict(default), "enabled": True},
            *selectors.model_endpoint_values(fields),
        ]
        users = _model_users()
        for row in rows:
            row["used_by"] = users.get(row["name"], [])
        return Response(ModelEndpointOutput(rows, many=True).data)


class ModelEndpointCheckApi(APIView):
    permission_classes = [IsAuthenticated, ModelEndpointPermission]
    queryset = selectors.model_endpoints_all().none()

    @extend_schema(
        request=None,
        parameters=[ModelCheckQuery],
        responses={200: ModelCheckOutput, **error_responses("ACODE-LLM-001", "ACODE-LLM-003")},
        operation_id="model_endpoints_check",
        description="Send the endpoint tool-call probes, as a job would, with deterministic "
        "sampling: in how many the model called the tool, how fast, and with what context "
        "window (`default`: the settings' endpoint; a scripted endpoint replays its script).",
    )
    def post(self, request: Request, name: str) -> Response:
        probes = query_of(ModelCheckQuery, request).get("probes", PROBES)
        found = model_check(_endpoint_named(name), probes=probes)
        return Response(ModelCheckOutput(asdict(found)).data)


class ModelEndpointDetailApi(APIView):
    permission_classes = [IsAuthenticated, ModelEndpointPermission]
    queryset = selectors.model_endpoints_all().none()

    @extend_schema(
        request=ModelEndpointInput,
        responses={
            200: ModelEndpointOutput,
            201: ModelEndpointOutput,
            **error_responses("ACODE-LLM-004", "ACODE-API-403"),
        },
        operation_id="model_endpoints_put",
        description="Add the model endpoint `name` (201) or change it (200): what the body "
        "gives over what it holds. An OpenAI-compatible endpoint needs a model; a scripted "
        "one a script.",
    )
    def put(self, request: Request, name: str) -> Response:
        endpoint, created = model_endpoint_save(
            name=name,
            data=body_of(ModelEndpointInput, request),
            user=request.user,  # type: ignore[arg-type]
        )
        row = {field: getattr(endpoint, field) for field in ENDPOINT_FIELDS}
        row["used_by"] = _model_users().get(endpoint.name, [])
        return Response(ModelEndpointOutput(row).data, status=201 if created else 200)
