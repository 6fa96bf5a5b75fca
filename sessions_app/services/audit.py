"""A session's record: what happens in a session is written to its audit chain (the
``audit`` app writes the log; a session's chain ends on the session's own row) and told to
its open pages after commit (``acode.live`` sends it). ``session_record`` is the one path of
a change to a session: its audit row, then its live event once the transaction commits, so
nobody hears of a change that did not commit. Anchoring seals every chain's head
(verifying is ``audit_verify.py``).

Every kind published here is an :class:`EventKind` of the catalog
(``sessions_app.services.event_catalog``), which says what each one re-renders. (Role
data's own event, ``roles.changed``, is ``acode.live``'s: the roles app, below this one,
schedules it.)

An anchor (``audit_anchor``, run periodically by Celery beat) seals the head of every
chain that moved since the last anchor, and anchors form a chain of their own.
Verification recomputes every hash and names the first row that does not fit: an edit, a
deletion or a reordering anywhere is detected, and so is a chain whose newest events were
removed together with its head, once an anchor has sealed them.
"""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from acode import live
from audit import services as audit_log
from audit.models import (
    GLOBAL_CHAIN,
    SESSION_CHAIN_PREFIX,
    AuditAnchor,
    AuditChain,
    AuditEvent,
    AuditEventType,
    chain_key,
)
from audit.services import GENESIS_HASH, anchor_hash
from roles.registry import RoleDef, registry
from sessions_app.models import AgentSession
from sessions_app.services.event_catalog import EventKind, catalogued
from sessions_app.services.locks import held_session


class SessionHead:
    """The head of a session's chain: the session's own row. When the calling service
    holds the session locked (``locks.lock_session``), the head is read from and advanced
    on that locked row, with no second lock."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session
        self.key = chain_key(session.pk)
        self.held = held_session(session.pk)

    def lock(self) -> tuple[int, str]:
        if self.held is not None:
            return self.held.audit_seq, self.held.audit_hash
        head = AgentSession.objects.select_for_update().filter(pk=self.session.pk)
        return head.values_list("audit_seq", "audit_hash").get()

    def advance(self, seq: int, digest: str) -> None:
        # The database moved the row's head with the event's INSERT (a trigger:
        # migrations/0031_session_head_trigger): the copies in hand follow.
        for row in {id(self.session): self.session, id(self.held): self.held}.values():
            if row is not None:
                row.audit_seq, row.audit_hash = seq, digest


def audit_record(
    *,
    event_type: AuditEventType | str,
    actor: str,
    session: AgentSession | None = None,
    role: str = "",
    target: str = "",
    result: str = "",
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event to its session's chain (or, without a session, to the chain of
    events without one), in the caller's transaction (``audit.services.audit_record``).

    Only that chain's head is locked (for a session, its own row), so events of one
    session get consecutive numbers while other sessions write in parallel.
    """
    return audit_log.audit_record(
        event_type=event_type,
        actor=actor,
        role=role,
        target=target,
        result=result,
        details=details,
        head=SessionHead(session) if session is not None else None,
    )


# -- telling the open pages (after commit) ---------------------------------------------

BOARD_GROUP = "acode-board"
# Every open board, session page and roles page joins it (published by acode.live).
ROLES_GROUP = live.ROLES_GROUP


def session_group(session_id: uuid.UUID | str) -> str:
    return f"acode-session-{session_id}"


def publish_session_event(
    session_id: uuid.UUID | str,
    kind: EventKind,
    data: dict[str, Any] | None = None,
    *,
    within: float = 0,
) -> None:
    """Tell the session's group and the board that something changed in a session.

    Consumers re-render from the database, so the message carries only what changed;
    a lost message is repaired by the page's resync on reconnect. A kind the catalog
    lacks is a programming error (ValueError): nobody would know what it re-renders.
    ``within`` (seconds, for a kind without data): the pages may hear of it that late,
    once for every event of this kind in the session meanwhile (``live.send_coalesced``).
    """
    message = {
        "type": "session.event",
        "kind": str(catalogued(kind)),
        "session": str(session_id),
        "data": data or {},
    }
    sends = [(session_group(session_id), message), (BOARD_GROUP, message)]
    if within > 0 and not data:
        live.send_coalesced(f"{session_id} {message['kind']}", sends, within=within)
    else:
        live.send(sends)


def publish_job_event(
    session_id: uuid.UUID | str, job_id: uuid.UUID | str, seq: int, kind: str, data: dict[str, Any]
) -> None:
    """Push one job event to the session's group (the session page's live job stream)."""
    message = {
        "type": EventKind.JOB_EVENT.value,
        "session": str(session_id),
        "job": str(job_id),
        "seq": seq,
        "kind": kind,
        "data": data,
    }
    sends = [(session_group(session_id), message)]
    if kind == "status":
        board = {**message, "type": "session.event", "kind": EventKind.JOB_STATUS.value}
        sends.append((BOARD_GROUP, board))
    live.send(sends)


# -- the one path of a change to a session -----------------------------------------------


def actor_name(user: User | None, actor: str | None = None) -> str:
    """How an actor is recorded: the given label, else the username, else ``system``."""
    if actor:
        return actor
    if user is not None and user.is_authenticated:
        return user.get_username()
    return "system"


def current_role_of(session: AgentSession) -> RoleDef:
    """The session's current role as the registry knows it (no query): the role its
    events are recorded in."""
    return registry.by_id(session.current_role_id)


def session_record(
    session: AgentSession,
    kind: EventKind,
    *,
    event_type: AuditEventType,
    actor: str,
    target: str,
    result: str,
    details: dict[str, Any],
    data: dict[str, Any] | None = None,
) -> None:
    """Record a change to a locked session: its audit row in the session's chain (in its
    current role), and ``kind`` told to the open pages once the transaction commits (with
    ``data``), so nobody hears of a change that did not commit."""
    audit_record(
        event_type=event_type,
        actor=actor,
        session=session,
        role=current_role_of(session).slug,
        target=target,
        result=result,
        details=details,
    )
    transaction.on_commit(lambda: publish_session_event(session.pk, kind, data))


# -- anchoring: sealing every chain's head -----------------------------------------------


class Head(NamedTuple):
    """The end of one chain, as its head row records it."""

    seq: int
    hash: str
    anchored_seq: int


def chain_heads(moved_only: bool = False) -> dict[str, Head]:
    """Every chain's head by chain key: sessions' from their rows, the global chain's."""
    sessions = AgentSession.objects.exclude(audit_seq=0)
    chains = AuditChain.objects.all()
    if moved_only:
        sessions = sessions.exclude(audit_anchored_seq=F("audit_seq"))
        chains = chains.exclude(last_seq=0).exclude(anchored_seq=F("last_seq"))
    heads = {
        chain_key(pk): Head(seq, digest, anchored)
        for pk, seq, digest, anchored in sessions.values_list(
            "pk", "audit_seq", "audit_hash", "audit_anchored_seq"
        ).iterator(chunk_size=2000)
    }
    heads.update(
        (key, Head(seq, digest, anchored))
        for key, seq, digest, anchored in chains.values_list(
            "key", "last_seq", "last_hash", "anchored_seq"
        )
    )
    return heads


ANCHOR_BATCH = 500  # sessions marked anchored per statement (and per transaction)


def audit_anchor() -> AuditAnchor | None:
    """Seal the head of every chain that moved since the last anchor (None if none did).

    The anchor is written in one short transaction. Marking how far each chain is sealed
    follows in batches with transactions of their own, so no session row stays locked
    while thousands of others are marked; a batch lost to a crash only makes the next
    anchor seal those heads again.
    """
    with transaction.atomic():
        last = AuditAnchor.objects.select_for_update().order_by("-seq").first()
        moved = chain_heads(moved_only=True)
        if not moved:
            return None
        anchor = AuditAnchor(
            seq=last.seq + 1 if last is not None else 1,
            heads={key: [head.seq, head.hash] for key, head in moved.items()},
            created_at=timezone.now(),
            prev_hash=last.hash if last is not None else GENESIS_HASH,
        )
        anchor.hash = anchor_hash(anchor)
        anchor.save(force_insert=True)
    _mark_anchored({key: head.seq for key, head in moved.items()})
    return anchor


def _mark_anchored(sealed: dict[str, int]) -> None:
    """Record that each chain is sealed up to its seq (never moving a mark back).

    One parameterised UPDATE per session, sent as a batch (``executemany``): an ORM
    ``Case``/``When`` over thousands of sessions costs seconds to build.
    """
    if GLOBAL_CHAIN in sealed:
        seq = sealed.pop(GLOBAL_CHAIN)
        AuditChain.objects.filter(pk=GLOBAL_CHAIN, anchored_seq__lt=seq).update(anchored_seq=seq)
    pk = AgentSession._meta.pk
    assert pk is not None
    quote = connection.ops.quote_name
    column = quote("audit_anchored_seq")
    sql = (
        f"UPDATE {quote(AgentSession._meta.db_table)} SET {column} = %s "
        f"WHERE {quote(pk.column)} = %s AND {column} < %s"
    )
    rows = [
        (seq, pk.get_db_prep_value(key.removeprefix(SESSION_CHAIN_PREFIX), connection), seq)
        for key, seq in sealed.items()
    ]
    for start in range(0, len(rows), ANCHOR_BATCH):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(sql, rows[start : start + ANCHOR_BATCH])
