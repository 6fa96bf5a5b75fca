"""The audit log: list, export, verify."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Generator, Iterator
from contextlib import closing
from datetime import tzinfo
from typing import Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import AcodeError, error_responses
from acode.inputs import query_of
from sessions_app.apis.common import request_user
from sessions_app.apis.serializers import (
    AuditEventOutput,
    AuditExportQuery,
    AuditPageOutput,
    AuditPageQuery,
    ChainReportOutput,
)
from sessions_app.filters import AuditFilter, audit_order
from sessions_app.permissions import audit_visible_to, can_verify_audit
from sessions_app.selectors.audit import audit_rows_streamed
from sessions_app.services.audit_verify import audit_verify_record


class AuditCursor(CursorPagination):
    ordering: str | list[str] = "-id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def decode_cursor(self, request: Request) -> Cursor | None:
        """The cursor; 404 when it names no page this API made (one that is not base64
        text at all is a 400, from ``AuditPageQuery``). DRF answers 404 too, but 500 for a
        position that is not an id."""
        try:
            cursor = super().decode_cursor(request)
            position = str(cursor.position or "0") if cursor is not None else "0"
            valid = position.isdigit() and int(position) < 2**63
        except NotFound:
            cursor, valid = None, False
        if not valid:
            raise AcodeError(
                "ACODE-API-404",
                "No page at that cursor: follow the next and previous links the API returns.",
                {"cursor": request.query_params.get(self.cursor_query_param, "")},
            )
        return cursor


def _audit_queryset(request: Request, params: dict[str, Any]) -> Any:
    """Visible audit rows matching the filters (one ``AuditFilter`` with the audit page);
    ``params`` are the query parameters an ``AuditFilterInput`` found valid."""
    qs = AuditFilter(request.query_params, queryset=audit_visible_to(request_user(request))).qs
    if "last" in params:
        newest = list(
            qs.order_by(*audit_order(request.query_params)).values_list("id", flat=True)[
                : params["last"]
            ]
        )
        qs = qs.filter(id__in=newest)
    return qs


class AuditListApi(APIView):
    @extend_schema(
        parameters=[AuditPageQuery],
        responses={200: AuditPageOutput, **error_responses("ACODE-API-400", "ACODE-API-404")},
        operation_id="audit_list",
    )
    def get(self, request: Request) -> Response:
        paginator = AuditCursor()
        paginator.ordering = audit_order(request.query_params)  # the position stays the id
        rows = _audit_queryset(request, query_of(AuditPageQuery, request))
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response(AuditEventOutput(page, many=True).data)


class AuditExportApi(APIView):
    @extend_schema(
        parameters=[AuditExportQuery],
        responses={
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, "text/csv"): OpenApiTypes.STR,
            **error_responses("ACODE-API-400"),
        },
        operation_id="audit_export",
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        params = query_of(AuditExportQuery, request)
        fmt = params["format"]
        qs = _audit_queryset(request, params).order_by(
            *audit_order(request.query_params, newest_first=False)
        )
        if fmt == "jsonl":
            body = _chunks(qs, _jsonl_lines)
            response = StreamingHttpResponse(
                _served(body, request), content_type="application/x-ndjson"
            )
            response["Content-Disposition"] = 'attachment; filename="acode-audit.jsonl"'
        else:
            body = _chunks(qs, _csv_lines)
            response = StreamingHttpResponse(_served(body, request), content_type="text/csv")
            response["Content-Disposition"] = 'attachment; filename="acode-audit.csv"'
        return response


# Rows per piece of the export sent at once (and per fetch from the database cursor);
# the first piece is small, so the download starts at once.
EXPORT_CHUNK_ROWS = 1000
EXPORT_FIRST_CHUNK_ROWS = 100
EXPORT_FIELDS = list(AuditEventOutput.Meta.fields)
_EXPORT_SOURCES = ["session_id" if f == "session" else f for f in EXPORT_FIELDS]


def export_row(values: tuple[Any, ...], zone: tzinfo) -> dict[str, Any]:
    """One exported event, as ``AuditEventOutput`` shapes it (DRF's ISO 8601 in the
    current time zone, ``Z`` for UTC), from a ``values_list`` row: a model instance and
    a serializer per row made the export several times slower."""
    row = dict(zip(EXPORT_FIELDS, values, strict=True))
    row["session"] = str(row["session"]) if row["session"] is not None else None
    moment = row["created_at"].astimezone(zone).isoformat()
    row["created_at"] = moment[:-6] + "Z" if moment.endswith("+00:00") else moment
    return row


def _chunks(qs: QuerySet[Any], lines: Any) -> Generator[str, None, None]:
    """The export, a chunk of rows at a time (read ``audit_rows_streamed``, a chunk a fetch);
    the first chunk is small, so the download starts at once. Closing it (a client gone)
    closes the read, its cursor and transaction."""
    zone = timezone.get_current_timezone()
    streamed = audit_rows_streamed(qs, _EXPORT_SOURCES, chunk_size=EXPORT_CHUNK_ROWS)
    with closing(streamed) as rows:
        batch: list[dict[str, Any]] = []
        first = True
        for values in rows:
            batch.append(export_row(values, zone))
            if len(batch) >= (EXPORT_FIRST_CHUNK_ROWS if first else EXPORT_CHUNK_ROWS):
                yield lines(batch, header=first)
                batch, first = [], False
        if batch or first:
            yield lines(batch, header=first)


def _jsonl_lines(rows: list[dict[str, Any]], *, header: bool) -> str:
    return "".join(json.dumps(r, default=str) + "\n" for r in rows)


def _csv_lines(rows: list[dict[str, Any]], *, header: bool) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    if header:
        writer.writerow(EXPORT_FIELDS)
    for row in rows:
        writer.writerow([json.dumps(row[c]) if c == "details" else row[c] for c in EXPORT_FIELDS])
    return buffer.getvalue()


def _served(
    body: Generator[str, None, None], request: Request
) -> Iterator[str] | AsyncIterator[str]:
    """The body as the server needs it to stream: under ASGI (daphne, uvicorn) Django reads
    a plain iterator to the end before sending anything, so it gets an async one there."""
    if isinstance(getattr(request, "_request", request), ASGIRequest):
        return _pulled(body)
    return body


async def _pulled(body: Generator[str, None, None]) -> AsyncIterator[str]:
    # Each chunk is made on the request's own thread (thread-sensitive): the one holding
    # its database connection, transaction and cursor.
    def pull() -> str | None:
        return next(body, None)

    take = sync_to_async(pull, thread_sensitive=True)
    try:
        while (chunk := await take()) is not None:
            yield chunk
    finally:
        await sync_to_async(body.close, thread_sensitive=True)()


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
