"""Writing the tamper-evident audit log: append one event to its chain, and the hashes.

Every session has its own chain and events without a session share one (``chain_key``),
so two writers only ever wait for each other when they write to the same chain. Where a
chain ends is its head: the chain of events without a session ends on ``AuditChain``
(this app's); a session's chain ends on the session's own row, which the sessions app
locks and moves (``sessions_app.services.audit``, which also anchors and verifies every
chain). Role services record their events here directly, in their own transaction.
"""

from __future__ import annotations

import hashlib
import json
from functools import partial
from typing import Any, Protocol

from django.db import transaction
from django.utils import timezone

from acode.metrics import metrics_from_audit
from acode.text import storable
from audit.models import GLOBAL_CHAIN, AuditAnchor, AuditChain, AuditEvent, AuditEventType

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


class ChainHead(Protocol):
    """Where one chain ends. ``key`` names the chain; ``session`` is what its events name
    (None for the chain of events without a session)."""

    key: str
    session: Any

    def lock(self) -> tuple[int, str]:
        """Lock the head until the transaction ends; its newest event's number and hash."""
        ...

    def advance(self, seq: int, digest: str) -> None:
        """Move the head to the event just written."""
        ...


class GlobalHead:
    """The head of the chain of events without a session: one ``AuditChain`` row."""

    key = GLOBAL_CHAIN
    session = None

    def lock(self) -> tuple[int, str]:
        chain = AuditChain.objects.select_for_update().filter(pk=GLOBAL_CHAIN).first()
        if chain is None:
            AuditChain.objects.get_or_create(
                key=GLOBAL_CHAIN
            )  # a savepoint: a racing creator is fine
            chain = AuditChain.objects.select_for_update().get(pk=GLOBAL_CHAIN)
        return chain.last_seq, chain.last_hash

    def advance(self, seq: int, digest: str) -> None:
        AuditChain.objects.filter(pk=self.key).update(last_seq=seq, last_hash=digest)


def audit_record(
    *,
    event_type: AuditEventType | str,
    actor: str,
    role: str = "",
    target: str = "",
    result: str = "",
    details: dict[str, Any] | None = None,
    head: ChainHead | None = None,
) -> AuditEvent:
    """Append one event to its chain (``head``; by default the chain of events without a
    session), in the caller's transaction.

    Only that chain's head is locked, so events of one chain get consecutive numbers and
    each links to the one before it, while other chains are written in parallel.
    """
    head = head if head is not None else GlobalHead()
    with transaction.atomic(savepoint=False):
        last_seq, last_hash = head.lock()
        event = AuditEvent(
            chain=head.key,
            seq=last_seq + 1,
            event_type=str(event_type),
            session=head.session,
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
        head.advance(event.seq, event.hash)
    # Counted once committed: a rolled-back event never shows in the metrics.
    transaction.on_commit(
        partial(
            metrics_from_audit, event_type=event.event_type, role=event.role,
            target=event.target, result=event.result, details=event.details,
        ),
        robust=True,
    )  # fmt: skip
    return event
