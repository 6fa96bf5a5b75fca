"""Locking a session (or job) row once per change, and handing the locked row down.

``lock_session`` is the one way a service locks a session. The outermost service takes the
lock; the services it calls get the same locked instance back without a query, so a run's
advance, a transition, a plan or job change locks the session once and every write lands
on one instance (nobody re-reads it, nobody copies fields across by hand).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

from django.db import transaction

from sessions_app.models import AgentSession, Job

# The session rows the current service holds locked, by id. A service that locks a session
# hands the same row to every service it calls (``lock_session`` yields it again without a
# query), so the row is locked once per change and nobody re-reads or re-syncs a copy.
_held: ContextVar[Mapping[Any, AgentSession]] = ContextVar(
    "acode_held_sessions", default=MappingProxyType({})
)


@contextmanager
def lock_session(session_id: Any) -> Iterator[AgentSession]:
    """Lock one session row for the enclosing transaction and yield it.

    Inside another ``lock_session`` of the same session (a run's advance calling the
    transition, plan and job services), it yields that locked row: one lock, one instance,
    every write seen by the callers. No joins: on PostgreSQL ``FOR UPDATE`` would lock the
    joined role rows too (deadlocks between sessions) and re-check the join after waiting
    (a session whose role just changed would seem to vanish)."""
    held = _held.get()
    pk = session_id.pk if isinstance(session_id, AgentSession) else session_id
    for key, row in held.items():
        if str(key) == str(pk):
            yield row
            return
    with transaction.atomic():
        row = AgentSession.objects.select_for_update().get(pk=pk)
        token = _held.set({**held, row.pk: row})
        try:
            yield row
        finally:
            _held.reset(token)


@contextmanager
def lock_session_found(rows: Iterable[AgentSession]) -> Iterator[AgentSession | None]:
    """Find one session and lock it in the same query (None when ``rows`` find none), then
    hold it as ``lock_session`` does: for a caller that knows the session by something
    other than its id (an outside agent's session id, ``rows`` filtering on its
    ``OutsideSession``). ``rows`` locks what it reads (``FOR UPDATE OF`` the session row
    alone: the rows it is found by are not locked, and do not change when the session
    does), and is run here, inside the transaction. No savepoint of its own: it is the
    first thing a hot path does in its transaction."""
    with transaction.atomic(savepoint=False):
        row = next(iter(rows), None)
        if row is None:
            yield None
            return
        token = _held.set({**_held.get(), row.pk: row})
        try:
            yield row
        finally:
            _held.reset(token)


def held_session(session_id: Any) -> AgentSession | None:
    """The locked row of this session if the current service holds it, else None."""
    for key, row in _held.get().items():
        if str(key) == str(session_id):
            return row
    return None


def lock_job(job_id: Any) -> Job:
    """Lock one job row for the enclosing transaction (inside ``transaction.atomic``).

    ``FOR NO KEY UPDATE``, not ``FOR UPDATE``: a row that refers to the job (its events)
    takes ``FOR KEY SHARE`` on it for its foreign key, which the stronger lock blocks. Under
    ``FOR UPDATE`` a writer appending an event from elsewhere (a note after the job was
    queued) waited on the holder for its key while the holder waited on that writer's
    unique sequence number: a deadlock. Now the other writer goes through and the holder
    meets a unique clash, which ``job_event`` answers by taking the next number."""
    return Job.objects.select_for_update(no_key=True).get(pk=job_id)
