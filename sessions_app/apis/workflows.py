"""Workflow templates and risk signals: read by everyone, exported and imported by staff."""

from __future__ import annotations

import copy
from dataclasses import asdict

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from acode.inputs import Query, QueryBoolean, query_of
from roles.apis.parsers import PlainTextParser
from roles.apis.portability import IMPORT_CODES
from roles.portability.document import dump_yaml
from sessions_app.apis.common import request_user
from sessions_app.apis.serializers import RiskSignalOutput, WorkflowImportOutput, WorkflowOutput
from sessions_app.permissions import can_manage_workflows
from sessions_app.selectors.runs import risk_signals, workflow_template, workflow_templates
from sessions_app.services.runs.portability import (
    DOCUMENT_SCHEMA,
    workflows_export,
    workflows_import,
    workflows_load,
)

STAFF_ONLY = "Exporting and importing workflow templates is for staff."


def check_staff(request: Request) -> None:
    if not can_manage_workflows(request_user(request)):
        raise PermissionDenied(STAFF_ONLY)


class WorkflowImportQuery(Query):
    replace = QueryBoolean(
        required=False,
        default=False,
        help_text="Remove signals and templates the file lacks (templates runs used are "
        "disabled instead)",
    )


class WorkflowListApi(APIView):
    @extend_schema(
        responses=WorkflowOutput(many=True),
        operation_id="workflows_list",
        description="Workflow templates with their stages, by name.",
    )
    def get(self, request: Request) -> Response:
        return Response(WorkflowOutput(workflow_templates(), many=True).data)


class WorkflowDetailApi(APIView):
    @extend_schema(
        responses={200: WorkflowOutput, **error_responses("ACODE-API-404")},
        parameters=[
            OpenApiParameter(
                "slug",
                str,
                OpenApiParameter.PATH,
                # export/ and import/ are routes of their own.
                pattern=r"^(?!(export|import)$)(?!\.\.?$)[^/\u0000]+$",
            )
        ],
        operation_id="workflows_retrieve",
    )
    def get(self, request: Request, slug: str) -> Response:
        template = workflow_template(slug)
        if template is None:
            raise NotFound(f"No workflow template {slug!r}.")
        return Response(WorkflowOutput(template).data)


class RiskSignalListApi(APIView):
    @extend_schema(
        responses=RiskSignalOutput(many=True),
        operation_id="risk_signals_list",
        description="What raises a run's risk tier: keywords, paths, plan size, failures.",
    )
    def get(self, request: Request) -> Response:
        return Response(RiskSignalOutput(risk_signals(), many=True).data)


class WorkflowExportApi(APIView):
    @extend_schema(
        responses={
            (200, "application/yaml"): OpenApiTypes.OBJECT,
            **error_responses("ACODE-API-403"),
        },
        operation_id="workflows_export",
        description="Every workflow template and risk signal as one YAML document (staff).",
    )
    def get(self, request: Request) -> HttpResponse:
        check_staff(request)
        return HttpResponse(dump_yaml(workflows_export()), content_type="application/yaml")


class WorkflowImportApi(APIView):
    parser_classes = [PlainTextParser]

    @extend_schema(
        request={"application/yaml": copy.deepcopy(DOCUMENT_SCHEMA)},
        parameters=[WorkflowImportQuery],
        responses={
            200: WorkflowImportOutput,
            **error_responses(*IMPORT_CODES, "ACODE-API-403"),
        },
        operation_id="workflows_import",
        description="Import a document from GET /api/workflows/export/ (staff). Everything "
        "is checked first; nothing is written if anything is wrong.",
    )
    def post(self, request: Request) -> Response:
        check_staff(request)
        replace = query_of(WorkflowImportQuery, request)["replace"]
        summary = workflows_import(
            workflows_load(str(request.data)),
            replace=replace,
            actor=request_user(request).get_username(),
        )
        return Response(WorkflowImportOutput(asdict(summary)).data)
