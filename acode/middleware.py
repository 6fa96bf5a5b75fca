"""Everything under ``/api/`` gets a request id, limits checked before anything parses the
request, and a JSON error body whatever answered: a view, DRF, Django or an exception.

Outside ``/api/`` (dashboard, admin) this middleware only turns a database that cannot be
reached into a plain 503 page; under ``/api/`` that is 503 ``ACODE-API-503``.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse

from acode.bodylimit import (
    MAX_REQUEST_ID_CHARS,
    REQUEST_ID_HEADER,
    is_printable_ascii,
    usable_request_id,
)
from acode.error_codes import ERROR_CODES
from acode.errors import code_for_status
from acode.inputs import MAX_QUERY_CHARS, has_forbidden_characters
from acode.logs import bind_log_context, restore_log_context

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
MAX_HEADER_CHARS = MAX_REQUEST_ID_CHARS
LIMITED_HEADERS = (REQUEST_ID_HEADER, "Idempotency-Key")
# Headers of an error response worth keeping when its body is replaced.
_KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")
# A database that cannot be reached (restarted, failed over, connections cut) raises these;
# Django reconnects on a later request, so the client is told to retry, not that we broke.
DATABASE_ERRORS = (OperationalError, InterfaceError)
RETRY_AFTER_SECONDS = 5
_UNAVAILABLE_PAGE = (
    "<!doctype html><title>Service temporarily unavailable</title>"
    "<h1>Service temporarily unavailable</h1>"
    "<p>The database cannot be reached right now. Retry in a few seconds.</p>"
)


def request_id_of(request: Any) -> str:
    """The request's id: the client's ``X-Request-ID``, or one made up for it."""
    return str(getattr(request, "request_id", "") or "")


def error_response(request: HttpRequest, code: str, message: str, **details: Any) -> JsonResponse:
    body = {
        "code": code,
        "message": message,
        "details": details,
        "request_id": request_id_of(request),
    }
    return JsonResponse(body, status=ERROR_CODES[code].http_status)


def database_unavailable(request: HttpRequest) -> HttpResponse:
    """503: JSON ``ACODE-API-503`` under ``/api/``, a plain page elsewhere; retry soon."""
    response: HttpResponse
    if request.path_info.startswith(API_PREFIX):
        response = error_response(
            request,
            "ACODE-API-503",
            "The database cannot be reached right now; retry in a few seconds.",
        )
    else:
        response = HttpResponse(_UNAVAILABLE_PAGE, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def _note_database_error(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    # An exception raised by a middleware (the registry sync reads the database before
    # every view) is answered 500 by Django before any outer middleware sees it; the
    # signal is sent while it is being handled, so remember it for ApiRequestMiddleware.
    exception = sys.exc_info()[1]
    if request is not None and isinstance(exception, DATABASE_ERRORS):
        request.acode_database_error = exception  # type: ignore[attr-defined]


got_request_exception.connect(_note_database_error, dispatch_uid="acode.middleware.database")


def _unless_database_error(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    if response.status_code == 500 and getattr(request, "acode_database_error", None):
        return database_unavailable(request)
    return response


def _assign_request_id(request: HttpRequest) -> None:
    given = request.headers.get(REQUEST_ID_HEADER, "")
    request.request_id = usable_request_id(given)  # type: ignore[attr-defined]


def _refusal(request: HttpRequest) -> HttpResponse | None:
    """An error response when the request breaks a limit, before anything parses it."""
    return _header_refusal(request) or _size_refusal(request) or _character_refusal(request)


def _header_refusal(request: HttpRequest) -> HttpResponse | None:
    for header in LIMITED_HEADERS:
        if len(request.headers.get(header, "")) > MAX_HEADER_CHARS:
            return error_response(
                request,
                "ACODE-API-431",
                f"{header} is longer than {MAX_HEADER_CHARS} characters.",
                header=header,
            )
    if not is_printable_ascii(request.headers.get(REQUEST_ID_HEADER, "")):
        return error_response(
            request,
            "ACODE-API-400",
            f"{REQUEST_ID_HEADER} may hold only printable ASCII characters.",
            header=REQUEST_ID_HEADER,
        )
    return None


def _size_refusal(request: HttpRequest) -> HttpResponse | None:
    length, limit = _body_length(request), settings.ACODE_MAX_BODY_BYTES
    if length <= limit:
        return None
    return error_response(
        request,
        "ACODE-API-413",
        f"The request body has {length} bytes; the limit is {limit}.",
        limit=limit,
    )


def _character_refusal(request: HttpRequest) -> HttpResponse | None:
    try:
        texts = [request.path, *_query_texts(request)]
    except SuspiciousOperation as exc:  # e.g. more query parameters than Django parses
        return error_response(request, "ACODE-API-400", str(exc))
    if any(has_forbidden_characters(text) for text in texts):
        return error_response(
            request,
            "ACODE-INP-003",
            "The path or query string holds a NUL or an unpaired surrogate.",
        )
    longest = max((len(text) for text in texts[1:]), default=0)
    if longest > MAX_QUERY_CHARS:
        return error_response(
            request,
            "ACODE-INP-001",
            f"A query parameter is longer than {MAX_QUERY_CHARS} characters.",
            limit=MAX_QUERY_CHARS,
        )
    return None


def _body_length(request: HttpRequest) -> int:
    declared = str(request.META.get("CONTENT_LENGTH") or "0")
    return int(declared) if declared.isdigit() else 0


def _query_texts(request: HttpRequest) -> Iterator[str]:
    for key, values in request.GET.lists():
        yield key
        yield from values


def _json_error(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    """The response, as a JSON error body with the request id when it is an error."""
    if response.status_code < 400 or response.streaming:
        return response
    content = getattr(response, "content", b"")
    body: Any = None
    if response.get("Content-Type", "").startswith("application/json"):
        try:
            body = json.loads(content)
        except ValueError:
            body = None
    if isinstance(body, dict) and body.get("code") in ERROR_CODES:
        body.setdefault("request_id", request_id_of(request))
        if body["code"] == "ACODE-API-503":  # raised by a service (Redis away): retry soon
            response.setdefault("Retry-After", str(RETRY_AFTER_SECONDS))
        response.content = json.dumps(body).encode()  # type: ignore[attr-defined]
        if response.has_header("Content-Length"):  # set by CommonMiddleware, inside this one
            response["Content-Length"] = str(len(response.content))  # type: ignore[attr-defined]
        return response
    code = code_for_status(response.status_code)
    replacement = error_response(request, code, f"{ERROR_CODES[code].title}: {request.path}")
    replacement.status_code = response.status_code
    for header in _KEPT_HEADERS:
        if header in response:
            replacement[header] = response[header]
    return replacement


class ApiRequestMiddleware:
    """Request ids, early limits and JSON errors for ``/api/``; 503 when the database is away."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not request.path_info.startswith(API_PREFIX):
            return _unless_database_error(request, self.get_response(request))
        _assign_request_id(request)
        response = _refusal(request) or self.get_response(request)
        response = _json_error(request, _unless_database_error(request, response))
        response[REQUEST_ID_HEADER] = request_id_of(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """A view failed: log it with the request id and answer ACODE-API-500 in JSON (503,
        also outside ``/api/``, when the database could not be reached)."""
        if isinstance(exception, DATABASE_ERRORS):
            logger.warning(
                "%s %s: the database cannot be reached (request id %s): %s",
                request.method,
                request.path,
                request_id_of(request),
                exception,
            )
            return database_unavailable(request)
        if not request.path_info.startswith(API_PREFIX):
            return None
        logger.error(
            "%s %s failed (request id %s)",
            request.method,
            request.path,
            request_id_of(request),
            exc_info=exception,
        )
        return error_response(
            request,
            "ACODE-API-500",
            "Internal error; report it with the request id.",
        )


# Views whose ``pk`` is a session id: their log lines say which session they are about.
_SESSION_VIEWS = ("api-session", "dashboard-session")


class LogContextMiddleware:
    """Binds the request id (made up outside ``/api/`` too) for every log line of the
    request, and the session when the view is about one; restores the context after."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not request_id_of(request):
            _assign_request_id(request)
        previous = bind_log_context(request_id=request_id_of(request))
        try:
            return self.get_response(request)
        finally:
            restore_log_context(previous)

    def process_view(
        self,
        request: HttpRequest,
        view: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        name = request.resolver_match.url_name if request.resolver_match else None
        if "pk" in kwargs and (name or "").startswith(_SESSION_VIEWS):
            bind_log_context(session=str(kwargs["pk"]))
