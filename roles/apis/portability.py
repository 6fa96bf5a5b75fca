"""Roles as a YAML document: export all role data, import a document (everything checked
first, nothing written if anything is wrong; ``roles.portability``)."""

from __future__ import annotations

import copy
from dataclasses import asdict

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from acode.inputs import Query, QueryBoolean, query_of
from roles import selectors
from roles.apis.parsers import PlainTextParser
from roles.apis.roles import RoleWritePermission
from roles.portability.definitions import export_definitions, import_definitions
from roles.portability.document import DOCUMENT_SCHEMA, dump_yaml, load_yaml

# What a YAML import can be refused with, before or after its form is checked.
IMPORT_CODES = (
    "ACODE-API-400",
    "ACODE-INP-003",
    "ACODE-IMP-001",
    "ACODE-IMP-002",
    "ACODE-IMP-003",
)


class ImportQuery(Query):
    replace = QueryBoolean(required=False, default=False, help_text="Remove what the file lacks")


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
