"""Replay: a recorded tool decision decided again, under a draft of its role.

A ``RecordedDecision`` is what a decision's audit row holds (``recorded_decision`` reads it):
the call, its recorded answer and rule, and the ``replay`` entry the executor writes
(``roles.decision.recording``). ``replay_decision`` runs ``decide`` (the executor's decision)
under the draft with the recorded host and workspace facts; it never guesses: a decision
recorded before replay entries existed, one whose arguments were not stored, one that
consulted a fact the recording lacks, or an MCP tool whose approved definition changed since
is reported as not replayable, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from roles.decision.core import Decision, PolicyRole, decide
from roles.decision.recording import NotRecorded, RecordedHost, RecordedWorkspace

NO_ENTRY = "recorded before replay inputs were kept (only a redacted summary of the arguments)"
CHECK_FAILED = "the recorded check failed before it decided"
MCP_CHANGED = "the MCP tool's approved definition changed since"


@dataclass(frozen=True)
class RecordedDecision:
    """One recorded decision: its audit row, the call and what was decided."""

    audit_id: int
    at: datetime | None
    tool: str
    allowed: bool
    code: str
    rule: str
    arguments: Any = None
    unrecorded: str = ""  # why the exact arguments are missing ("" when they are here)
    host: Mapping[str, Any] | None = None
    links: tuple[Any, ...] = ()
    definition_hash: str = ""
    session: str = ""
    target: str = ""
    ask: bool = False  # the call was put to a person (a rule's "outcome": "ask")

    @property
    def outcome(self) -> str:
        """allow | ask | deny, as ``Decision.outcome``."""
        return "allow" if self.allowed else "ask" if self.ask else "deny"


CONSENT_EVENT = "ToolConsent"  # a call put to a person: its "asked" row is the decision


def recorded_decision(
    *, audit_id: int, at: datetime | None, event_type: str, result: str,
    target: str = "", details: Mapping[str, Any], session: str = "",
) -> RecordedDecision:  # fmt: skip
    """A decision's audit row (``ToolDecision``, ``ToolDenied`` with phase "decision", or
    ``ToolConsent`` with phase "asked") as a ``RecordedDecision``."""
    entry = details.get("replay")
    allowed = event_type == "ToolDecision"
    unrecorded = ""
    if not isinstance(entry, Mapping):
        entry, unrecorded = {}, NO_ENTRY
    elif "arguments" not in entry:
        unrecorded = str(entry.get("unrecorded") or "the arguments were not recorded")
    if details.get("rule") == "check_failed":
        unrecorded = CHECK_FAILED
    return RecordedDecision(
        audit_id=audit_id, at=at, tool=str(details.get("tool", "")), allowed=allowed,
        code="" if allowed else str(details.get("code") or result), rule=str(details.get("rule", "")),
        arguments=entry.get("arguments"), unrecorded=unrecorded,
        host=entry.get("host") if isinstance(entry.get("host"), Mapping) else None,
        links=tuple(entry.get("links") or ()), definition_hash=str(details.get("definition_hash", "")),
        session=session, target=target, ask=event_type == CONSENT_EVENT,
    )  # fmt: skip


@dataclass(frozen=True)
class Replayed:
    """A recorded decision and the draft's: ``decision`` None when it cannot be replayed
    (``reason`` says why)."""

    recorded: RecordedDecision
    decision: Decision | None = None
    reason: str = ""
    detail: str = ""  # the reason, for this decision (which path)

    @property
    def change(self) -> str:
        """unchanged | allowed->denied | denied->allowed | not replayable, and with the
        ask outcome: allowed->asked, asked->allowed, asked->denied, denied->asked"""
        if self.decision is None:
            return "not replayable"
        before, after = self.recorded.outcome, self.decision.outcome
        if before == after:
            return "unchanged"
        return f"{_PAST[before]}->{_PAST[after]}"


_PAST = {"allow": "allowed", "ask": "asked", "deny": "denied"}
# Every change a replay reports (``Replayed.change``, and "rule changed" for the same
# outcome by another rule).
CHANGES = ("allowed->denied", "denied->allowed", "allowed->asked", "asked->allowed",
           "denied->asked", "asked->denied", "rule changed", "not replayable")  # fmt: skip


def replay_decision(role: PolicyRole, recorded: RecordedDecision) -> Replayed:
    """``recorded``'s call decided under ``role`` with the facts it recorded, or why not."""
    if recorded.unrecorded:
        return Replayed(recorded, reason=recorded.unrecorded)
    declaration = role.access.declaration(recorded.tool)
    mcp = declaration is not None and declaration.kind == "mcp"
    if mcp and declaration.pinned_hash != recorded.definition_hash:  # type: ignore[union-attr]
        return Replayed(recorded, reason=MCP_CHANGED)
    host = RecordedHost(recorded.host)
    workspace = RecordedWorkspace.of(recorded.links)
    try:
        decision = decide(role, recorded.tool, recorded.arguments, host=host, workspace=workspace)
    except NotRecorded as exc:
        reason, detail = (
            f"depends on {fact}, which was not recorded" for fact in (exc.fact, exc.detail)
        )
        return Replayed(recorded, reason=reason, detail=detail)
    return Replayed(recorded, decision)


@dataclass
class ReplayGroup:
    """Replayed decisions with the same change, tool and rules (recorded and the draft's)."""

    change: str
    tool: str
    recorded_rule: str
    rule: str
    reason: str = ""  # why not replayable
    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ReplayTally:
    """Counts of a replay and its groups: every change, and every decision whose deciding
    rule differs; a few examples per group, each with its audit row."""

    per_group: int = 5
    total: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)
    groups: dict[tuple[str, str, str, str, str], ReplayGroup] = field(default_factory=dict)

    def add(self, item: Replayed) -> None:
        self.total += 1
        change = item.change
        self.counts[change] = self.counts.get(change, 0) + 1
        rec, decision = item.recorded, item.decision
        if decision is None:
            self.reasons[item.reason] = self.reasons.get(item.reason, 0) + 1
        elif change == "unchanged" and decision.rule == rec.rule:
            return
        elif change == "unchanged":
            change = "rule changed"
        rule = decision.rule if decision is not None else ""
        key = (change, rec.tool, rec.rule, rule, item.reason)
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = ReplayGroup(change, rec.tool, rec.rule, rule, item.reason)
        group.count += 1
        if len(group.examples) < self.per_group:
            group.examples.append(_example(item))

    def as_data(self) -> dict[str, Any]:
        counts = self.counts
        return {
            "decisions": self.total,
            "replayed": self.total - counts.get("not replayable", 0),
            "unchanged": counts.get("unchanged", 0),
            "allowed_to_denied": counts.get("allowed->denied", 0),
            "denied_to_allowed": counts.get("denied->allowed", 0),
            "to_or_from_asked": sum(n for change, n in counts.items() if "asked" in change),
            "not_replayable": counts.get("not replayable", 0),
            "not_replayable_reasons": [
                {"reason": reason, "count": n}
                for reason, n in sorted(self.reasons.items(), key=lambda kv: -kv[1])
            ],
            "groups": [{**vars(g)} for g in sorted(self.groups.values(), key=_group_order)],
        }


_ORDER = {"allowed->denied": 0, "denied->allowed": 1, "allowed->asked": 2, "asked->allowed": 2,
          "denied->asked": 2, "asked->denied": 2, "rule changed": 3, "not replayable": 4}  # fmt: skip


def _group_order(group: ReplayGroup) -> tuple[int, int, str]:
    return (_ORDER.get(group.change, 9), -group.count, group.tool)


def _example(item: Replayed) -> dict[str, Any]:
    rec, decision = item.recorded, item.decision
    return {
        "audit_id": rec.audit_id, "at": rec.at.isoformat() if rec.at else None,
        "session": rec.session, "target": rec.target,
        "recorded": rec.outcome, "recorded_code": rec.code,
        "decision": "" if decision is None else decision.outcome,
        "code": "" if decision is None else decision.code,
        "reason": (item.detail or item.reason) if decision is None else decision.reason,
    }  # fmt: skip
