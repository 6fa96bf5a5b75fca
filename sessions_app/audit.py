"""The tamper-evident audit log: append events to a hash chain, verify the chain."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from acode.db import PendingRow, execute_insert, execute_update, statement_cursor
from sessions_app.models import AgentSession, AuditEvent, AuditEventType, AuditHead

GENESIS_HASH = "0" * 64


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _canonical(
    *,
    seq: int,
    event_type: str,
    session_id: Any,
    role: str,
    actor: str,
    target: str,
    result: str,
    details: Any,
    created_at: datetime,
    prev_hash: str,
) -> str:
    return _json(
        {
            "seq": seq,
            "event_type": event_type,
            "session": str(session_id) if session_id else None,
            "role": role,
            "actor": actor,
            "target": target,
            "result": result,
            "details": details,
            "created_at": created_at.isoformat(),
            "prev_hash": prev_hash,
        }
    )


def canonical_parts(
    *,
    event_type: str,
    session_id: Any,
    role: str,
    actor: str,
    target: str,
    result: str,
    details: Any,
    created_at: datetime,
) -> tuple[str, str, str]:
    """An event's canonical text around the two values only the locked chain head gives.

    ``before + prev_hash + between + str(seq) + after`` is exactly ``_canonical`` (keys in
    sorted order: ..., event_type, prev_hash, result, role, seq, session, target), so the
    database can hash an event whose sequence number and predecessor it reads itself.
    """
    before = (
        f'{{"actor":{_json(actor)},"created_at":{_json(created_at.isoformat())},'
        f'"details":{_json(details)},"event_type":{_json(event_type)},"prev_hash":"'
    )
    between = f'","result":{_json(result)},"role":{_json(role)},"seq":'
    session = str(session_id) if session_id else None
    after = f',"session":{_json(session)},"target":{_json(target)}}}'
    return before, between, after


def event_hash(event: AuditEvent) -> str:
    """The hash an event must carry, from its own content and the previous hash."""
    text = _canonical(
        seq=event.seq,
        event_type=event.event_type,
        session_id=event.session_id,
        role=event.role,
        actor=event.actor,
        target=event.target,
        result=event.result,
        details=event.details,
        created_at=event.created_at,
        prev_hash=event.prev_hash,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalise_details(details: dict[str, Any] | None) -> Any:
    """Details as the JSON column gives them back (what an event's hash is computed over)."""
    return json.loads(json.dumps(details or {}, default=str))


def head_request() -> PendingRow[AuditHead]:
    """Send the query that locks the chain head; read it with ``head_from``."""
    return PendingRow(AuditHead, 1, for_update=True)


def head_from(pending: PendingRow[AuditHead]) -> AuditHead:
    """The locked chain head, created on first use."""
    head = pending.get()
    if head is not None:
        return head
    try:
        with transaction.atomic():
            AuditHead.objects.create(pk=1)
    except IntegrityError:
        pass  # another writer created it first
    return AuditHead.objects.select_for_update().get(pk=1)


def audit_append(
    cursor: Any,
    head: AuditHead,
    *,
    event_type: AuditEventType | str,
    actor: str,
    session: AgentSession | None = None,
    role: str = "",
    target: str = "",
    result: str = "",
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """Send the INSERT of the event that follows ``head`` and move ``head`` past it.

    The caller holds the head's lock (``head_from``) and sends ``head_store`` after its
    last append, all in one transaction. Nothing is waited for here.
    """
    normalised = normalise_details(details)
    event = AuditEvent(
        seq=head.last_seq + 1,
        event_type=str(event_type),
        session=session,
        role=role,
        actor=actor[:150],
        target=target[:1000],
        result=result[:200],
        details=normalised,
        created_at=timezone.now(),
        prev_hash=head.last_hash,
    )
    event.hash = event_hash(event)
    execute_insert(cursor, event)
    head.last_seq, head.last_hash = event.seq, event.hash
    return event


def head_store(cursor: Any, head: AuditHead) -> None:
    """Send the update that records ``head`` as the end of the chain."""
    execute_update(
        cursor, AuditHead, head.pk, {"last_seq": head.last_seq, "last_hash": head.last_hash}
    )


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
    """Append one event to the chain, in the caller's transaction.

    The chain head is locked for the append, so events get consecutive sequence numbers
    and each one's ``prev_hash`` is the hash of the one before it.
    """
    with transaction.atomic(savepoint=False), statement_cursor() as cursor:
        head = head_from(head_request())
        event = audit_append(
            cursor,
            head,
            event_type=event_type,
            actor=actor,
            session=session,
            role=role,
            target=target,
            result=result,
            details=details,
        )
        head_store(cursor, head)
    return event


@dataclass(frozen=True)
class ChainReport:
    """The outcome of verifying the audit chain."""

    ok: bool
    checked: int
    first_bad_seq: int | None = None
    first_bad_id: int | None = None
    problem: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "first_bad_seq": self.first_bad_seq,
            "first_bad_id": self.first_bad_id,
            "problem": self.problem,
        }


def audit_verify() -> ChainReport:
    """Recompute every hash in order; name the first row that does not fit."""
    expected_prev = GENESIS_HASH
    expected_seq = 1
    checked = 0
    for event in AuditEvent.objects.order_by("seq").iterator(chunk_size=2000):
        if event.seq != expected_seq:
            return ChainReport(
                False,
                checked,
                event.seq,
                event.pk,
                f"event #{expected_seq} is missing (next present is #{event.seq})",
            )
        if event.prev_hash != expected_prev:
            return ChainReport(
                False,
                checked,
                event.seq,
                event.pk,
                f"event #{event.seq} does not link to the event before it",
            )
        if event_hash(event) != event.hash:
            return ChainReport(
                False,
                checked,
                event.seq,
                event.pk,
                f"event #{event.seq} (id {event.pk}) was altered after it was written",
            )
        expected_prev = event.hash
        expected_seq += 1
        checked += 1
    head = AuditHead.objects.filter(pk=1).first()
    if head is not None and head.last_seq != checked:
        return ChainReport(
            False,
            checked,
            checked + 1,
            None,
            f"the chain ends at #{checked} but #{head.last_seq} was written: events were removed",
        )
    return ChainReport(True, checked)
