"""The tamper-evident audit log: append to a session's hash chain, anchor, verify.

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
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from acode.metrics import metrics_from_audit
from sessions_app.models import (
    AgentSession,
    AuditAnchor,
    AuditChain,
    AuditEvent,
    AuditEventType,
    AuditVerification,
    chain_key,
)
from sessions_app.models.audit import GLOBAL_CHAIN, SESSION_CHAIN_PREFIX

GENESIS_HASH = "0" * 64


_SURROGATE = re.compile("[\ud800-\udfff]")


def safe_text(value: str) -> str:
    """Text every database and hash accepts: NUL and lone surrogates become U+FFFD."""
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    return _SURROGATE.sub("\ufffd", value)


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
    head_saved_by_caller: bool = False,
) -> AuditEvent:
    """Append one event to its session's chain, in the caller's transaction.

    Only that chain's head is locked (for a session, its own row), so events of one
    session get consecutive numbers and each links to the one before it, while other
    sessions write in parallel.

    ``head_saved_by_caller``: the caller locked ``session`` (``lock_session``) in this
    transaction and saves ``audit_seq`` and ``audit_hash`` with its own update of the row; the head
    is read from and advanced on that instance, so the append costs one INSERT. Should
    the instance be stale, the INSERT breaks the chain's unique numbering and fails.
    """
    key = chain_key(session.pk if session is not None else None)
    with transaction.atomic(savepoint=False):
        if head_saved_by_caller and session is not None:
            last_seq, last_hash = session.audit_seq, session.audit_hash
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
            session.audit_seq, session.audit_hash = event.seq, event.hash
            if not head_saved_by_caller:
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


def _heads(moved_only: bool = False) -> dict[str, Head]:
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
        moved = _heads(moved_only=True)
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


@dataclass(frozen=True)
class ChainReport:
    """The outcome of verifying the audit log."""

    ok: bool
    checked: int
    first_bad_seq: int | None = None
    first_bad_id: int | None = None
    chain: str = ""
    problem: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "chain": self.chain or None,
            "first_bad_seq": self.first_bad_seq,
            "first_bad_id": self.first_bad_id,
            "problem": self.problem,
        }


@dataclass(frozen=True)
class _Problem:
    chain: str
    seq: int | None
    row_id: int | None
    text: str

    def order(self) -> tuple[int, int]:
        return (0, self.row_id) if self.row_id is not None else (1, 0)


Seals = dict[str, dict[int, tuple[str, int]]]  # chain -> seq -> (hash, anchor seq)


def _verify_anchors() -> tuple[Seals, _Problem | None]:
    """Check the anchors' own chain; return every chain head they sealed."""
    sealed: Seals = defaultdict(dict)
    expected_prev, expected_seq = GENESIS_HASH, 1
    for anchor in AuditAnchor.objects.order_by("seq").iterator(chunk_size=500):
        if (
            anchor.seq != expected_seq
            or anchor.prev_hash != expected_prev
            or anchor_hash(anchor) != anchor.hash
        ):
            text = f"anchor #{expected_seq} was altered, removed or reordered"
            return sealed, _Problem("anchors", anchor.seq, None, text)
        for key, (seq, digest) in anchor.heads.items():
            sealed[key][int(seq)] = (digest, anchor.seq)
        expected_prev, expected_seq = anchor.hash, expected_seq + 1
    return sealed, None


class _ChainWalk:
    """One chain's events in order, checked one at a time."""

    def __init__(self, key: str, seals: dict[int, tuple[str, int]]) -> None:
        self.key, self.seals = key, seals
        self.expected_prev, self.expected_seq, self.checked = GENESIS_HASH, 1, 0
        self.problem: _Problem | None = None

    def _fail(self, event: AuditEvent | None, seq: int, what: str) -> None:
        if self.problem is None:
            row = event.pk if event is not None else None
            self.problem = _Problem(self.key, seq, row, f"{self.key}: {what}")

    def step(self, event: AuditEvent) -> None:
        if self.problem is not None:
            return
        if event.seq != self.expected_seq:
            what = f"event #{self.expected_seq} is missing (next present is #{event.seq})"
            self._fail(event, event.seq, what)
        elif event.prev_hash != self.expected_prev:
            self._fail(
                event,
                event.seq,
                f"event #{event.seq} (id {event.pk}) does not link to the one before it",
            )
        elif event_hash(event) != event.hash:
            self._fail(
                event,
                event.seq,
                f"event #{event.seq} (id {event.pk}) was altered after it was written",
            )
        elif event.seq in self.seals and self.seals[event.seq][0] != event.hash:
            anchor = self.seals[event.seq][1]
            self._fail(
                event,
                event.seq,
                f"event #{event.seq} (id {event.pk}) differs from what anchor #{anchor} sealed",
            )
        else:
            self.expected_prev, self.expected_seq = event.hash, event.seq + 1
            self.checked += 1

    def finish(self, head: Head | None) -> None:
        last = self.expected_seq - 1
        if self.problem is not None:
            return
        if head is not None and (head.seq != last or head.hash != self.expected_prev):
            self._fail(
                None,
                last + 1,
                f"the chain ends at #{last} but #{head.seq} was written: events were removed",
            )
        elif self.seals and max(self.seals) > last:
            seq = max(self.seals)
            self._fail(
                None,
                last + 1,
                f"events up to #{seq}, sealed by anchor #{self.seals[seq][1]}, were removed",
            )


def audit_verify() -> ChainReport:
    """Recompute every hash of every chain and of the anchors; name the first bad row."""
    sealed, anchor_problem = _verify_anchors()
    heads = _heads()
    walks: dict[str, _ChainWalk] = {}
    walk: _ChainWalk | None = None
    for event in AuditEvent.objects.order_by("chain", "seq").iterator(chunk_size=2000):
        if walk is None or walk.key != event.chain:
            walk = walks[event.chain] = _ChainWalk(event.chain, sealed.get(event.chain, {}))
        walk.step(event)
    for key in set(heads) | set(sealed):
        if key not in walks and (heads.get(key) is None or heads[key].seq or sealed.get(key)):
            walks[key] = _ChainWalk(key, sealed.get(key, {}))
    for key, chain_walk in walks.items():
        chain_walk.finish(heads.get(key))
    problems = [w.problem for w in walks.values() if w.problem is not None]
    if anchor_problem is not None:
        problems.append(anchor_problem)
    checked = sum(w.checked for w in walks.values())
    if not problems:
        return ChainReport(True, checked)
    first = min(problems, key=_Problem.order)
    return ChainReport(False, checked, first.seq, first.row_id, first.chain, first.text)


def audit_verify_record(*, actor: str) -> tuple[ChainReport, AuditVerification]:
    """Verify the whole log now and store the outcome (the audit page's chain status)."""
    report = audit_verify()
    stored = AuditVerification.objects.create(
        ok=report.ok,
        checked=report.checked,
        chain=report.chain,
        first_bad_seq=report.first_bad_seq,
        first_bad_id=report.first_bad_id,
        problem=report.problem,
        actor=actor[:150],
        verified_at=timezone.now(),
    )
    return report, stored


def audit_last_verification() -> AuditVerification | None:
    """The newest stored verification, if any."""
    return AuditVerification.objects.order_by("-verified_at").first()
