"""A session read again by its id (after an action changed it); and a stored answer to an
idempotent request. A view finds what a user asks for, and whether they may, in one call:
``permissions.session_for`` (``run_for``, ``job_for``)."""

from __future__ import annotations

from typing import Any, NamedTuple

from sessions_app.models import AgentSession, IdempotencyRecord

# What reading or locking a session by an id that names none raises (``lock_session`` in a
# service too): a view that hands a service the id answers it as a session not visible.
SessionNotFound = AgentSession.DoesNotExist


def session_by_id(pk: Any) -> AgentSession | None:
    return AgentSession.objects.select_related("owner").filter(pk=pk).first()


class StoredAnswer(NamedTuple):
    """The response kept for an ``Idempotency-Key``, and the request it answered."""

    key: str
    fingerprint: str
    status_code: int
    body: Any


def idempotency_answer(user: Any, key: str) -> StoredAnswer | None:
    """The answer kept for the user's ``key``, if a request with it was answered."""
    row = (
        IdempotencyRecord.objects.filter(user=user, key=key)
        .values_list("key", "fingerprint", "status_code", "body")
        .first()
    )
    return StoredAnswer(*row) if row is not None else None
