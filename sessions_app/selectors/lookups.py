"""One session, job or run by its id, with what its views read of it; and a stored answer
to an idempotent request. Who may see what is found is ``permissions.may``'s answer."""

from __future__ import annotations

from typing import Any, NamedTuple

from sessions_app.models import AgentSession, IdempotencyRecord, Job, Run


def session_by_id(pk: Any) -> AgentSession | None:
    return AgentSession.objects.select_related("owner").filter(pk=pk).first()


def job_by_id(pk: Any) -> Job | None:
    return Job.objects.select_related("session", "role", "role_version").filter(pk=pk).first()


def run_by_id(pk: Any) -> Run | None:
    return Run.objects.select_related("session", "template").filter(pk=pk).first()


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
