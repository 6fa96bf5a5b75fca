"""acode's error codes and the one exception type that carries them.

Services raise :class:`AcodeError`; :func:`api_exception_handler` turns it (and DRF's own
errors) into ``{"code", "message", "details"}`` with the HTTP status of the code, and
``acode.middleware`` adds the request id and does the same for the errors Django answers
itself. The table of codes lives in ``acode/error_codes.toml``, read by ``acode.error_codes``
(the single source of truth, free of Django so the CLI can use it); the README's table is
generated from it (``python -m acode.error_codes``) and a test keeps the two equal.

The OpenAPI schema documents errors the same way: views declare the codes they raise with
:func:`error_responses`, and :func:`document_common_errors` adds, to every operation, the
statuses any request can get (bad headers, body too large, not logged in, ...).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers
from rest_framework.response import Response

from acode.error_codes import ERROR_CODES, ErrorCode, error_table_markdown

__all__ = [
    "ERROR_CODES",
    "AcodeError",
    "ErrorCode",
    "ErrorOutput",
    "api_exception_handler",
    "document_common_errors",
    "error_responses",
    "error_table_markdown",
]


class AcodeError(Exception):
    """A domain error with a stable ACODE code, a plain-words message and structured details."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"undocumented error code {code}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details: dict[str, Any] = details or {}

    @property
    def http_status(self) -> int:
        return ERROR_CODES[self.code].http_status

    @property
    def hint(self) -> str:
        return ERROR_CODES[self.code].hint

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ErrorOutput(serializers.Serializer):
    """The body of every error the API returns."""

    code = serializers.CharField(help_text="A documented ACODE code (README, Error codes).")
    message = serializers.CharField()
    details = serializers.DictField(help_text="Structured facts about the error; may be empty.")
    request_id = serializers.CharField(
        help_text="The request's X-Request-ID (the client's, or one the server made up)."
    )


def code_for_status(status: int) -> str:
    """The generic ACODE-API code of an HTTP status (400 or 500 for statuses without one)."""
    code = f"ACODE-API-{status}"
    if code in ERROR_CODES:
        return code
    return "ACODE-API-500" if status >= 500 else "ACODE-API-400"


# DRF validation codes that have an ACODE code of their own (the rest are ACODE-API-400).
_FIELD_CODES = {
    "max_length": "ACODE-INP-001",
    "blank": "ACODE-INP-002",
    "null_characters_not_allowed": "ACODE-INP-003",
    "surrogate_characters_not_allowed": "ACODE-INP-003",
}


def _leaf_codes(codes: Any) -> Iterable[str]:
    if isinstance(codes, dict):
        for value in codes.values():
            yield from _leaf_codes(value)
    elif isinstance(codes, list):
        for value in codes:
            yield from _leaf_codes(value)
    else:
        yield str(codes)


def validation_code(exc: drf_exceptions.ValidationError) -> str:
    """One ACODE code for a validation error: specific when every problem is of one kind."""
    found = {_FIELD_CODES.get(code, "ACODE-API-400") for code in _leaf_codes(exc.get_codes())}
    return found.pop() if len(found) == 1 else "ACODE-API-400"


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Render every API error as ``{"code", "message", "details"}``."""
    # Imported here: rest_framework.views loads the parser classes, which use AcodeError.
    from rest_framework.views import exception_handler

    if isinstance(exc, AcodeError):
        return Response(exc.as_dict(), status=exc.http_status)
    if isinstance(exc, Http404):
        exc = drf_exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = drf_exceptions.PermissionDenied()
    response = exception_handler(exc, context)
    if response is None:
        return None  # a bug: the middleware logs it and answers ACODE-API-500
    details: dict[str, Any] = {}
    if isinstance(exc, drf_exceptions.ValidationError):
        code, message = validation_code(exc), "The request has invalid fields."
        details = {"fields": response.data}
    elif isinstance(exc, drf_exceptions.APIException):
        code, message = code_for_status(response.status_code), str(exc.detail)
    else:  # pragma: no cover - DRF only handles APIException subclasses
        code = code_for_status(response.status_code)
        message = ERROR_CODES[code].title
    response.data = {"code": code, "message": message, "details": details}
    return response


def _describe(codes: Iterable[str]) -> str:
    return "; ".join(f"{code} {ERROR_CODES[code].title}" for code in codes)


def error_responses(*codes: str) -> dict[int, OpenApiResponse]:
    """OpenAPI responses for ``extend_schema``: each status with the codes it may carry."""
    by_status: dict[int, list[str]] = defaultdict(list)
    for code in codes:
        by_status[ERROR_CODES[code].http_status].append(code)
    return {
        status: OpenApiResponse(ErrorOutput, description=_describe(found))
        for status, found in sorted(by_status.items())
    }


# What any request may get, whatever the operation (added to what the view declared).
_ANY_REQUEST = {
    # malformed parameters or X-Request-ID; NUL in the path or query; a query value over
    # 1000 characters
    400: ("ACODE-API-400", "ACODE-INP-001", "ACODE-INP-003"),
    406: ("ACODE-API-406",),
    413: ("ACODE-API-413",),
    431: ("ACODE-API-431",),
    503: ("ACODE-API-503",),  # the database (or, creating a job, Redis) cannot be reached
}
_UNSAFE = {"post", "put", "patch", "delete"}
# What changes a session, its run or its job is refused while the session is archived.
_ON_A_SESSION = ("/api/sessions/{", "/api/runs/{", "/api/jobs/{")
_ARCHIVING = ("/archive/", "/restore/")


def _common_errors(path: str, method: str, operation: dict[str, Any]) -> dict[int, tuple[str, ...]]:
    statuses = dict(_ANY_REQUEST)
    secured = any(requirement for requirement in operation.get("security", [{}]))
    if secured:
        statuses[401] = ("ACODE-API-401",)
    if secured and method in _UNSAFE:
        statuses[403] = ("ACODE-API-403",)  # also CSRF, for cookie sessions
    if "{" in path:
        statuses[404] = ("ACODE-API-404",)
    if method in _UNSAFE and path.startswith(_ON_A_SESSION) and not path.endswith(_ARCHIVING):
        statuses[409] = ("ACODE-SES-007",)
    if "requestBody" in operation:
        statuses[400] = (*statuses[400], "ACODE-INP-002", "ACODE-INP-004")
        statuses[415] = ("ACODE-API-415",)
    if any(p.get("in") == "query" for p in operation.get("parameters", [])):
        statuses[400] = (*statuses[400], "ACODE-INP-002")  # an empty or blank value
    headers = {p["name"] for p in operation.get("parameters", []) if p.get("in") == "header"}
    if "Idempotency-Key" in headers:
        statuses[422] = ("ACODE-API-422",)
    return statuses


def document_common_errors(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: give every operation the error responses any
    request can get, each with the ``ErrorOutput`` body (codes the view declared for the
    same status stay, the common ones are added)."""
    error_body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOutput"}}}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            for status, codes in _common_errors(path, method, operation).items():
                response = responses.setdefault(
                    str(status), {"description": "", "content": error_body}
                )
                described = response["description"]
                missing = [code for code in dict.fromkeys(codes) if code not in described]
                if missing:
                    extra = _describe(missing)
                    response["description"] = f"{described}; {extra}" if described else extra
    return result
