"""A session read again by its id (after an action changed it); a stored answer to an
idempotent request; the session and role a request is about, for its log lines. A view
finds what a user asks for, and whether they may, in one call: ``permissions.session_for``
(``run_for``, ``job_for``)."""

from __future__ import annotations

from typing import Any, NamedTuple

from roles.registry import registry
from sessions_app.models import AgentSession, IdempotencyRecord, Job, Run


def session_by_id(pk: Any) -> AgentSession | None:
    return AgentSession.objects.select_related("owner").filter(pk=pk).first()


def log_keys(found: AgentSession | Run | Job) -> dict[str, str]:
    """The session a request about ``found`` is in and its current role (a job's: the
    job's own), as its log lines say them (spec FR-070). The registry names the role: no
    query."""
    session = found if isinstance(found, AgentSession) else found.session
    role_id = found.role_id if isinstance(found, Job) else session.current_role_id
    return {"session": str(session.pk), "role": registry.by_id(role_id).name}


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
