"""The panels of the session page (timeline, transitions, plan, changes, time in role) as
plain values for the templates; ``session.SessionPage`` reads the session into them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sessions_app.dashboard.formatting import (
    DARK_INK,
    RoleBadge,
    Stamp,
    duration_text,
    plan_progress,
    role_badge,
    stamp_of,
)
from sessions_app.models import PendingChange, RiskTier, RunStatus, StepStatus

RISK_LABELS = dict(RiskTier.choices)
# What a session waits for while its run has this status.
WAITING_FOR: dict[str, str] = {
    RunStatus.AWAITING_APPROVAL: "approval",
    RunStatus.AWAITING_INPUT: "an answer",
    RunStatus.BLOCKED: "a person to decide",
}


@dataclass(frozen=True)
class RiskBadge:
    tier: str
    label: str
    title: str


@dataclass(frozen=True)
class WaitingView:
    what: str
    since: Stamp
    text: str


# Diff lines shown per pending change before the rest is summarised.
DIFF_LINE_LIMIT = 400


@dataclass(frozen=True)
class TimelineEntry:
    seq: int
    from_role: RoleBadge | None
    to_role: RoleBadge
    reason: str
    actor: str
    at: Stamp


@dataclass(frozen=True)
class TransitionOption:
    """A transition out of the current role; a button only when ``allowed_now``."""

    to_role: RoleBadge
    allowed_now: bool
    condition: str
    unmet: str
    explanation: str


@dataclass(frozen=True)
class DiffLine:
    kind: str  # add, del, hunk, meta, ctx
    text: str


@dataclass(frozen=True)
class ChangeView:
    path: str
    kind: str
    kind_label: str
    role: RoleBadge | None
    lines: list[DiffLine]
    added: int
    removed: int
    hidden_lines: int
    updated_at: datetime


@dataclass(frozen=True)
class RoleShare:
    role: RoleBadge
    seconds: float
    duration: str
    percent: float


@dataclass
class PlanStepView:
    number: int
    title: str
    detail: str
    files: list[str]
    depends_on: list[int]
    status: str
    status_label: str


@dataclass
class PlanView:
    steps: list[PlanStepView] = field(default_factory=list)
    done: int = 0

    @property
    def total(self) -> int:
        return len(self.steps)

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 0


def diff_lines(diff: str) -> list[DiffLine]:
    """Classify unified-diff lines for colouring; the template escapes the text."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---", "diff ", "index ", "new file", "deleted file")):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append(DiffLine(kind, line))
    return out


def change_view(change: PendingChange) -> ChangeView:
    lines = diff_lines(change.diff)
    return ChangeView(
        path=change.path,
        kind=change.kind,
        kind_label=change.get_kind_display(),
        role=role_badge(change.role.slug) if change.role else None,
        lines=lines[:DIFF_LINE_LIMIT],
        added=sum(1 for line in lines if line.kind == "add"),
        removed=sum(1 for line in lines if line.kind == "del"),
        hidden_lines=max(0, len(lines) - DIFF_LINE_LIMIT),
        updated_at=change.updated_at,
    )


def plan_view(plan: Sequence[Mapping[str, Any]]) -> PlanView:
    labels = dict(StepStatus.choices)
    steps = [
        PlanStepView(
            number=int(step.get("number", i)),
            title=str(step.get("title", "")),
            detail=str(step.get("detail", "")),
            files=[str(f) for f in step.get("files", [])],
            depends_on=[int(d) for d in step.get("depends_on", [])],
            status=str(step.get("status", StepStatus.PENDING)),
            status_label=str(labels.get(step.get("status", ""), step.get("status", ""))),
        )
        for i, step in enumerate(plan, start=1)
    ]
    done, _ = plan_progress(plan)
    return PlanView(steps, done)


WAITING_BADGE = RoleBadge("", "Waiting for a person", "#cbd5e1", DARK_INK)


def role_shares(seconds: Mapping[str, float], *, waiting: float = 0.0) -> list[RoleShare]:
    """Seconds per role (from ``sessions_app.selectors``) as shares, largest first; time
    spent waiting for a person (an answer, an approval) is a share of its own, last."""
    total = sum(seconds.values()) + waiting
    shares = [
        RoleShare(
            role_badge(slug),
            value,
            duration_text(value),
            round(100 * value / total, 1) if total else 0.0,
        )
        for slug, value in sorted(seconds.items(), key=lambda kv: -kv[1])
    ]
    if waiting > 0:
        shares.append(
            RoleShare(
                WAITING_BADGE, waiting, duration_text(waiting), round(100 * waiting / total, 1)
            )
        )
    return shares


def timeline_entries(
    history: Iterable[tuple[int, str | None, str, str, str, datetime]],
) -> list[TimelineEntry]:
    """Transitions as (seq, from slug, to slug, reason, actor, time) rows, newest first."""
    entries = [
        TimelineEntry(
            seq,
            role_badge(from_slug) if from_slug else None,
            role_badge(to_slug),
            reason,
            actor,
            stamp_of(at),
        )
        for seq, from_slug, to_slug, reason, actor, at in history
    ]
    entries.reverse()
    return entries
