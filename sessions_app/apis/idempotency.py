"""``Idempotency-Key`` for POST endpoints: a retried request gets the first result.

The operation and the stored response commit in one transaction, so two identical
requests racing each other cannot both write: the loser's transaction hits the unique
key, rolls back, and replays the winner's stored response. A 5xx answer is not a result:
it is rolled back and not stored, so a retry with the same key runs the operation again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction
from rest_framework.request import Request
from rest_framework.response import Response

from acode.errors import AcodeError
from sessions_app.selectors.lookups import StoredAnswer, idempotency_answer
from sessions_app.services.idempotency import idempotency_record_create

HEADER = "Idempotency-Key"


def _fingerprint(request: Request) -> str:
    body = json.dumps(request.data, sort_keys=True, default=str) if request.data else ""
    raw = f"{request.method} {request.path}\n{body}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _replay(record: StoredAnswer, fingerprint: str) -> Response:
    if record.fingerprint != fingerprint:
        return Response(
            AcodeError(
                "ACODE-API-422",
                f"{HEADER} {record.key!r} was already used for a different request.",
                {"key": record.key},
            ).as_dict(),
            status=422,
        )
    response = Response(record.body, status=record.status_code)
    response["Idempotent-Replay"] = "true"
    return response


def run_as_response(operation: Callable[[], Response]) -> Response:
    """Run an operation, turning a domain error into its JSON response (no exception)."""
    try:
        return operation()
    except AcodeError as exc:
        return Response(exc.as_dict(), status=exc.http_status)


def idempotent(request: Request, operation: Callable[[], Response]) -> Response:
    """Run ``operation`` once per (user, Idempotency-Key); replay its response afterwards."""
    key = request.headers.get(HEADER, "").strip()
    if not key:  # (its length was checked with the other headers: acode.middleware)
        return run_as_response(operation)
    fingerprint = _fingerprint(request)
    user: Any = request.user
    existing = idempotency_answer(user, key)
    if existing is not None:
        return _replay(existing, fingerprint)
    try:
        with transaction.atomic():
            response = run_as_response(operation)
            if response.status_code >= 500:
                # Unavailable for now (the broker or the database away): nothing is kept,
                # so the same request with the same key is tried afresh, not answered 503.
                transaction.set_rollback(True)
                return response
            idempotency_record_create(
                user=user,
                key=key,
                fingerprint=fingerprint,
                status_code=response.status_code,
                body=json.loads(json.dumps(response.data, default=str)),
            )
    except IntegrityError:
        existing = idempotency_answer(user, key)
        if existing is None:
            raise
        return _replay(existing, fingerprint)
    return response
