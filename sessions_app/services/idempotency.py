"""The answers kept for ``Idempotency-Key`` requests (``sessions_app.apis.idempotency``)."""

from __future__ import annotations

from typing import Any

from sessions_app.models import IdempotencyRecord


def idempotency_record_create(
    *, user: Any, key: str, fingerprint: str, status_code: int, body: Any
) -> None:
    """Keep the answer to the user's request with ``key``, in the caller's transaction (the
    one the request's own writes are in). A request with the same key that committed
    first makes this raise ``IntegrityError``: the caller replays that one's answer."""
    IdempotencyRecord.objects.create(
        user=user, key=key, fingerprint=fingerprint, status_code=status_code, body=body
    )
