"""The tamper-evident audit log: append to a session's hash chain, anchor (verifying is
``audit_verify.py``).

Every session has its own chain and events without a session share one (``chain_key``),
so two writers only ever wait for each other when they write to the same session. An
anchor (``audit_anchor``, run periodically by Celery beat) seals the head of every chain
that moved since the last anchor, and anchors form a chain of their own. Verification
recomputes every hash and names the first row that does not fit: an edit, a deletion or
a reordering anywhere is detected, and so is a chain whose newest events were removed
together with its head, once an anchor has sealed them.
"""

from __future__ import annotations

import hashlib
import json
from functools import partial
from typing import Any, NamedTuple

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from acode.metrics import metrics_from_audit
from acode.text import storable
from sessions_app.models import (
    AgentSession,
    AuditAnchor,
    AuditChain,
    AuditEvent,
    AuditEventType,
    chain_key,
)
from sessions_app.models.audit import GLOBAL_CHAIN, SESSION_CHAIN_PREFIX
from sessions_app.services.locks import held_session

GENESIS_HASH = "0" * 64


def safe_text(value: str) -> str:
    """Text every database and hash accepts: NUL and lone surrogates become U+FFFD."""
    return storable(value)


def safe_details(value: Any) -> Any:
    """Details as the JSON column gives them back, with every string made ``safe_text``."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_text(str(k)): safe_details(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [safe_details(v) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return safe_text(str(value))


def _digest(content: dict[str, Any]) -> str:
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def event_hash(event: AuditEvent) -> str:
    """The hash an event must carry: its content, its place in its chain and the hash before."""
    return _digest(
        {
            "chain": event.chain,
            "seq": event.seq,
            "event_type": event.event_type,
            "session": str(event.session_id) if event.session_id else None,
            "role": event.role,
            "actor": event.actor,
            "target": event.target,
            "result": event.result,
            "details": event.details,
            "created_at": event.created_at.isoformat(),
            "prev_hash": event.prev_hash,
        }
    )


def anchor_hash(anchor: AuditAnchor) -> str:
    """The hash an anchor must carry."""
    return _digest(
        {
            "seq": anchor.seq,
            "heads": anchor.heads,
            "created_at": anchor.created_at.isoformat(),
            "prev_hash": anchor.prev_hash,
        }
    )


def _locked_head(session: AgentSession | None) -> tuple[int, str]:
    """Lock the chain's head (a session's own row, or the chain for events without one)
    until the transaction ends; its newest event's number and hash."""
    if session is not None:
        head = AgentSession.objects.select_for_update().filter(pk=session.pk)
        return head.values_list("audit_seq", "audit_hash").get()
    chain = AuditChain.objects.select_for_update().filter(pk=GLOBAL_CHAIN).first()
    if chain is None:
        AuditChain.objects.get_or_create(key=GLOBAL_CHAIN)  # a savepoint: a racing creator is fine
        chain = AuditChain.objects.select_for_update().get(pk=GLOBAL_CHAIN)
    return chain.last_seq, chain.last_hash


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
    """Append one event to its session's chain, in the caller's transaction.

    Only that chain's head is locked (for a session, its own row), so events of one
    session get consecutive numbers and each links to the one before it, while other
    sessions write in parallel. When the calling service holds the session locked
    (``locks.lock_session``), the head is read from and advanced on that locked row, with
    no second lock.
    """
    key = chain_key(session.pk if session is not None else None)
    held = held_session(session.pk) if session is not None else None
    with transaction.atomic(savepoint=False):
        if held is not None:
            last_seq, last_hash = held.audit_seq, held.audit_hash
        else:
            last_seq, last_hash = _locked_head(session)
        event = AuditEvent(
            chain=key,
            seq=last_seq + 1,
            event_type=str(event_type),
            session=session,
            role=safe_text(role)[:64],
            actor=safe_text(actor)[:150],
            target=safe_text(target)[:1000],
            result=safe_text(result)[:200],
            details=safe_details(details or {}),
            created_at=timezone.now(),
            prev_hash=last_hash,
        )
        event.hash = event_hash(event)
        event.save(force_insert=True)
        if session is not None:
            for row in {id(session): session, id(held): held}.values():
                if row is not None:
                    row.audit_seq, row.audit_hash = event.seq, event.hash
            AgentSession.objects.filter(pk=session.pk).update(
                audit_seq=event.seq, audit_hash=event.hash
            )
        else:
            AuditChain.objects.filter(pk=key).update(last_seq=event.seq, last_hash=event.hash)
    # Counted once committed: a rolled-back event never shows in the metrics.
    transaction.on_commit(
        partial(
            metrics_from_audit, event_type=event.event_type, role=event.role,
            target=event.target, result=event.result, details=event.details,
        ),
        robust=True,
    )  # fmt: skip
    return event


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
