"""The audit log: list, export, verify."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import AcodeError, error_responses
from sessions_app.apis.common import request_user
from sessions_app.apis.serializers import (
    AuditEventOutput,
    AuditFilterInput,
    AuditPageOutput,
    ChainReportOutput,
)
from sessions_app.filters import AuditFilter
from sessions_app.models import AuditEventType
from sessions_app.permissions import audit_visible_to, can_verify_audit
from sessions_app.services.audit import audit_verify_record


class AuditCursor(CursorPagination):
    ordering = "-id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def decode_cursor(self, request: Request) -> Cursor | None:
        """The cursor; 400 when it is not one this API made (DRF answers 404, or 500 for a
        position that is not an id)."""
        try:
            cursor = super().decode_cursor(request)
            valid = cursor is None or str(cursor.position or "0").isdigit()
        except NotFound:
            cursor, valid = None, False
        if not valid:
            raise AcodeError(
                "ACODE-API-400",
                "The cursor is not one this API returned; follow the next and previous links.",
                {"cursor": request.query_params.get(self.cursor_query_param, "")},
            )
        return cursor


AUDIT_FILTERS = [
    OpenApiParameter("event_type", str, enum=AuditEventType.values),
    OpenApiParameter("session", OpenApiTypes.UUID),
    OpenApiParameter("role", str),
    OpenApiParameter("actor", str),
    OpenApiParameter("since", OpenApiTypes.DATETIME),
    OpenApiParameter("until", OpenApiTypes.DATETIME),
    OpenApiParameter("last", int, description="Only the newest N events (1 to 10,000)"),
]


def _audit_queryset(request: Request) -> Any:
    """Visible audit rows matching the filters (one ``AuditFilter`` with the audit page)."""
    params = AuditFilterInput(data=request.query_params)
    params.is_valid(raise_exception=True)
    qs = AuditFilter(request.query_params, queryset=audit_visible_to(request_user(request))).qs
    if "last" in params.validated_data:
        newest = list(
            qs.order_by("-id").values_list("id", flat=True)[: params.validated_data["last"]]
        )
        qs = qs.filter(id__in=newest)
    return qs


class AuditListApi(APIView):
    @extend_schema(
        parameters=[
            *AUDIT_FILTERS,
            OpenApiParameter("cursor", str, description="From a page's next or previous link"),
            OpenApiParameter("page_size", int, description="Events per page (default 100)"),
        ],
        responses={200: AuditPageOutput, **error_responses("ACODE-API-400")},
        operation_id="audit_list",
    )
    def get(self, request: Request) -> Response:
        paginator = AuditCursor()
        page = paginator.paginate_queryset(_audit_queryset(request), request, view=self)
        return paginator.get_paginated_response(AuditEventOutput(page, many=True).data)


class AuditExportApi(APIView):
    @extend_schema(
        parameters=[
            *AUDIT_FILTERS,
            OpenApiParameter("format", str, enum=["jsonl", "csv"], required=True),
        ],
        responses={
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, "text/csv"): OpenApiTypes.STR,
            **error_responses("ACODE-API-400"),
        },
        operation_id="audit_export",
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        fmt = request.query_params.get("format", "jsonl")
        if fmt not in ("jsonl", "csv"):
            raise AcodeError("ACODE-API-400", "format must be jsonl or csv.", {"format": fmt})
        qs = _audit_queryset(request).order_by("id")
        rows = (AuditEventOutput(e).data for e in qs.iterator(chunk_size=1000))
        if fmt == "jsonl":
            body: Iterator[str] = (json.dumps(r, default=str) + "\n" for r in rows)
            response = StreamingHttpResponse(body, content_type="application/x-ndjson")
            response["Content-Disposition"] = 'attachment; filename="acode-audit.jsonl"'
        else:
            response = StreamingHttpResponse(_csv_lines(rows), content_type="text/csv")
            response["Content-Disposition"] = 'attachment; filename="acode-audit.csv"'
        return response


def _csv_lines(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    columns = list(AuditEventOutput.Meta.fields)
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(columns)
    yield flush()
    for row in rows:
        writer.writerow([json.dumps(row[c]) if c == "details" else row[c] for c in columns])
        yield flush()


class AuditVerifyApi(APIView):
    @extend_schema(
        responses={200: ChainReportOutput, **error_responses("ACODE-API-403")},
        operation_id="audit_verify",
        description="Recompute the audit hash chain and name the first bad row.",
    )
    def get(self, request: Request) -> Response:
        if not can_verify_audit(request.user):
            raise PermissionDenied(
                "Verifying the whole audit chain needs the view_auditevent permission."
            )
        report, _ = audit_verify_record(actor=request_user(request).get_username())
        return Response(report.as_dict())
