"""Verifying the tamper-evident audit log (``audit.services`` appends, ``audit.py`` anchors).

Verification recomputes every hash and names the first row that does not fit: an edit, a
deletion or a reordering anywhere is detected, and so is a chain whose newest events were
removed together with its head, once an anchor has sealed them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from audit.models import AuditAnchor, AuditEvent, AuditVerification
from audit.services import GENESIS_HASH, anchor_hash, event_hash
from sessions_app.services.audit import Head, chain_heads


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
    heads = chain_heads()
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
