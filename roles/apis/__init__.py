"""REST API for roles, tools and transition rules (reads come from the registry)."""

from __future__ import annotations

import copy
from dataclasses import asdict
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import DjangoModelPermissions, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import AcodeError, error_responses
from acode.inputs import Query, QueryBoolean, Text, json_schema_problems, query_of
from acode.yamldoc import integral_numbers
from roles import selectors
from roles.apis.drafts import RoleDraftOutput, draft_data
from roles.apis.parsers import PlainTextParser
from roles.portability.definitions import export_definitions, import_definitions
from roles.portability.document import DOCUMENT_SCHEMA, dump_yaml, load_yaml
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
from roles.services import role_delete, role_write
from roles.validation import role_field_problems, role_schema

# /api/roles/export/, /api/roles/import/ and /api/roles/test/ are routes of their own, so
# no role answers to those names (roles.validation.RESERVED_SLUGS).
ROLE_NAME = OpenApiParameter(
    "name",
    str,
    OpenApiParameter.PATH,
    pattern=r"^(?!(export|import|test)$)(?!\.\.?$)[^/\u0000]{1,100}$",
    description="A role's slug or name, any case.",
)


class PromptComponentOutput(serializers.Serializer):
    key = serializers.CharField()
    bytes = serializers.IntegerField()
    content = serializers.CharField(required=False)


class PromptPackOutput(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.CharField()
    description = serializers.CharField()
    active = serializers.BooleanField()
    components = PromptComponentOutput(many=True)


class MeOutput(serializers.Serializer):
    username = serializers.CharField()
    is_staff = serializers.BooleanField()


class RoleListApi(APIView):
    @extend_schema(responses=RoleOutput(many=True), operation_id="roles_list")
    def get(self, request: Request) -> Response:
        return Response(RoleOutput(registry.list_roles(), many=True).data)


class RoleDetailApi(APIView):
    @extend_schema(
        responses={200: RoleDetailOutput, **error_responses("ACODE-ROL-001")},
        parameters=[ROLE_NAME],
        operation_id="roles_retrieve",
    )
    def get(self, request: Request, name: str) -> Response:
        return Response(RoleDetailOutput(registry.get(name)).data)


class PromptQuery(Query):
    pack = Text(max_length=100, required=False, help_text="Prompt pack (default: active pack)")


class ImportQuery(Query):
    replace = QueryBoolean(required=False, default=False, help_text="Remove what the file lacks")


class RolePromptApi(APIView):
    @extend_schema(
        responses={
            200: ComposedPromptOutput,
            **error_responses("ACODE-ROL-001", "ACODE-PRM-002"),
        },
        parameters=[ROLE_NAME, PromptQuery],
        operation_id="roles_prompt",
    )
    def get(self, request: Request, name: str) -> Response:
        composed = compose_prompt(name, pack=query_of(PromptQuery, request).get("pack"))
        return Response(asdict(composed))


class ToolListApi(APIView):
    @extend_schema(responses=ToolOutput(many=True), operation_id="tools_list")
    def get(self, request: Request) -> Response:
        return Response([tool_data(t) for t in registry.tools()])


class TransitionRuleListApi(APIView):
    @extend_schema(responses=RuleOutput(many=True), operation_id="transition_rules_list")
    def get(self, request: Request) -> Response:
        return Response([rule_data(r) for r in registry.all_rules()])


class RoleWritePermission(DjangoModelPermissions):
    """Writes need Django's model permissions on Role (add/change/delete), as in admin;
    the views name the model with an empty ``queryset``."""


ROLE_CREATE = role_schema(required=("slug", "name"))
ROLE_UPDATE = role_schema(required=(), with_slug=False)  # a slug cannot change
# What a YAML import can be refused with, before or after its form is checked.
IMPORT_CODES = (
    "ACODE-API-400",
    "ACODE-INP-003",
    "ACODE-IMP-001",
    "ACODE-IMP-002",
    "ACODE-IMP-003",
)
ROLE_CODES = (
    "ACODE-ROL-004",
    "ACODE-PRM-001",
    "ACODE-ROL-001",
    "ACODE-API-404",
    "ACODE-API-409",
    "ACODE-ROL-008",
)


def role_input(data: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """The request body once ``schema``, the one the API publishes, allows it (else 400
    ACODE-ROL-004 naming each problem); ``role_write`` checks the rest."""
    problems = json_schema_problems(schema, data)
    if problems:
        # The schema decides; the role checks say it in their own words where they can.
        listed = (role_field_problems(data) if isinstance(data, dict) else []) or problems
        raise AcodeError(
            "ACODE-ROL-004", "Invalid role: " + "; ".join(listed), {"problems": listed}
        )
    return dict(integral_numbers(data))


class RoleCreateApi(APIView):
    permission_classes = [IsAuthenticated, RoleWritePermission]
    queryset = selectors.roles_all().none()

    @extend_schema(
        request={"application/json": copy.deepcopy(ROLE_CREATE)},
        responses={201: RoleDetailOutput, **error_responses(*ROLE_CODES)},
        operation_id="roles_create",
    )
    def post(self, request: Request) -> Response:
        slug = role_write(
            data=role_input(request.data, ROLE_CREATE),
            user=request.user,  # type: ignore[arg-type]
            create=True,
        ).slug
        return Response(RoleDetailOutput(registry.get(slug)).data, status=201)


class RoleWriteApi(APIView):
    permission_classes = [IsAuthenticated, RoleWritePermission]
    queryset = selectors.roles_all().none()

    @extend_schema(
        request={"application/json": copy.deepcopy(ROLE_UPDATE)},
        responses={
            200: RoleDetailOutput,
            202: RoleDraftOutput,
            **error_responses(*ROLE_CODES, "ACODE-ROL-015"),
        },
        parameters=[ROLE_NAME],
        operation_id="roles_update",
        description="Change a role. A protected role is not changed: the change becomes a "
        "draft (202, the draft) another admin publishes (POST /api/role-drafts/{id}/publish/).",
    )
    def patch(self, request: Request, name: str) -> Response:
        role = registry.get(name)
        written = role_write(
            data=role_input(request.data, ROLE_UPDATE),
            user=request.user,  # type: ignore[arg-type]
            create=False,
            slug=role.slug,
        )
        if written.draft is not None:
            return Response(draft_data(written.draft), status=202)
        return Response(RoleDetailOutput(registry.get(role.slug)).data)

    @extend_schema(
        responses={
            204: None,
            **error_responses("ACODE-ROL-001", "ACODE-ROL-005", "ACODE-ROL-009"),
        },
        parameters=[ROLE_NAME],
        operation_id="roles_destroy",
    )
    def delete(self, request: Request, name: str) -> Response:
        role = selectors.role_row(registry.get(name).slug)
        role_delete(role=role, user=request.user)  # type: ignore[arg-type]
        return Response(status=204)


class RoleExportApi(APIView):
    @extend_schema(
        responses={(200, "application/yaml"): OpenApiTypes.OBJECT}, operation_id="roles_export"
    )
    def get(self, request: Request) -> HttpResponse:
        return HttpResponse(dump_yaml(export_definitions()), content_type="application/yaml")


class ImportOutput(serializers.Serializer):
    roles = serializers.IntegerField()
    tools = serializers.IntegerField()
    permissions = serializers.IntegerField()
    rules = serializers.IntegerField()
    prompt_components = serializers.IntegerField()
    mcp_servers = serializers.IntegerField()
    argument_limits = serializers.IntegerField()
    versions = serializers.ListField(child=serializers.CharField())
    removed = serializers.ListField(child=serializers.CharField())
    drafts = serializers.ListField(
        child=serializers.CharField(), help_text="Protected roles' changes, kept as drafts."
    )


class RoleImportApi(APIView):
    permission_classes = [IsAuthenticated, RoleWritePermission]
    queryset = selectors.roles_all().none()
    parser_classes = [PlainTextParser]

    @extend_schema(
        request={"application/yaml": copy.deepcopy(DOCUMENT_SCHEMA)},
        parameters=[ImportQuery],
        responses={
            200: ImportOutput,
            **error_responses(
                *IMPORT_CODES, "ACODE-ROL-005", "ACODE-PRM-001", "ACODE-ROL-008", "ACODE-ROL-015"
            ),
        },
        description="Import a document like GET /api/roles/export/ gives. Everything is "
        "checked first; nothing is written if anything is wrong.",
        operation_id="roles_import",
    )
    def post(self, request: Request) -> Response:
        if not request.user.has_perm("roles.add_role") or not request.user.has_perm(
            "roles.change_role"
        ):
            raise PermissionDenied(
                "Importing roles needs the add_role and change_role permissions."
            )
        replace = query_of(ImportQuery, request)["replace"]
        summary = import_definitions(
            load_yaml(str(request.data)),
            user=request.user,  # type: ignore[arg-type]
            replace=replace,
        )
        return Response(asdict(summary))


class PromptPackListApi(APIView):
    @extend_schema(responses=PromptPackOutput(many=True), operation_id="prompt_packs_list")
    def get(self, request: Request) -> Response:
        return Response([_pack_data(name, with_content=False) for name in registry.prompt_packs()])


class PromptPackDetailApi(APIView):
    @extend_schema(responses=PromptPackOutput, operation_id="prompt_packs_retrieve")
    def get(self, request: Request, name: str) -> Response:
        return Response(_pack_data(name, with_content=True))


def _pack_data(name: str, *, with_content: bool) -> dict[str, Any]:
    texts = registry.prompt_texts(name)
    if texts is None:
        raise AcodeError(
            "ACODE-PRM-002",
            f"Unknown prompt pack {name!r}.",
            {"pack": name, "known_packs": registry.prompt_packs()},
        )
    pack = selectors.prompt_pack_row(name)
    return {
        "name": name,
        "version": pack.version,
        "description": pack.description,
        "active": name == settings.ACODE_PROMPT_PACK,
        "components": [
            {
                "key": key,
                "bytes": len(text.encode("utf-8")),
                **({"content": text} if with_content else {}),
            }
            for key, text in sorted(texts.items())
        ],
    }


class MeApi(APIView):
    """Who the caller is; also the trivial authenticated endpoint benchmarks compare against."""

    @extend_schema(responses=MeOutput, operation_id="me_retrieve")
    def get(self, request: Request) -> Response:
        user: Any = request.user
        return Response({"username": user.get_username(), "is_staff": bool(user.is_staff)})


class RoleCollectionApi(RoleCreateApi, RoleListApi):
    """``GET`` lists roles; ``POST`` creates one (needs ``roles.add_role``)."""


class RoleResourceApi(RoleWriteApi, RoleDetailApi):
    """``GET`` shows a role; ``PATCH`` and ``DELETE`` need the change/delete permissions."""
