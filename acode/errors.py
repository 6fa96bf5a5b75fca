"""acode's error codes and the one exception type that carries them.

Services raise :class:`AcodeError`; :func:`api_exception_handler` turns it (and DRF's own
errors) into ``{"code", "message", "details"}`` with the HTTP status of the code. The table
of codes lives in ``acode.error_codes`` (the single source of truth, free of Django so the
CLI can use it); the README's table is generated from it (``python -m acode.error_codes``) and a
test keeps the two equal.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions as drf_exceptions
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from acode.error_codes import ERROR_CODES, ErrorCode, error_table_markdown

__all__ = [
    "ERROR_CODES",
    "AcodeError",
    "ErrorCode",
    "api_exception_handler",
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


_DRF_STATUS_CODES = {
    status.HTTP_400_BAD_REQUEST: "ACODE-API-400",
    status.HTTP_401_UNAUTHORIZED: "ACODE-API-401",
    status.HTTP_403_FORBIDDEN: "ACODE-API-403",
    status.HTTP_404_NOT_FOUND: "ACODE-API-404",
    status.HTTP_405_METHOD_NOT_ALLOWED: "ACODE-API-405",
    status.HTTP_429_TOO_MANY_REQUESTS: "ACODE-API-429",
}


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Render every API error as ``{"code", "message", "details"}``."""
    if isinstance(exc, AcodeError):
        return Response(exc.as_dict(), status=exc.http_status)
    if isinstance(exc, Http404):
        exc = drf_exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = drf_exceptions.PermissionDenied()
    response = exception_handler(exc, context)
    if response is None:
        return None
    code = _DRF_STATUS_CODES.get(response.status_code, f"ACODE-API-{response.status_code}")
    if isinstance(exc, drf_exceptions.ValidationError):
        message = "The request has invalid fields."
        details: Any = {"fields": response.data}
    elif isinstance(exc, drf_exceptions.APIException):
        message = str(exc.detail)
        details = {}
    else:  # pragma: no cover - DRF only handles APIException subclasses
        message = ERROR_CODES.get(code, ERROR_CODES["ACODE-API-500"]).title
        details = {}
    response.data = {"code": code, "message": message, "details": details}
    return response
