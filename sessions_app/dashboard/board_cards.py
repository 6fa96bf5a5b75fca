"""What a board card shows of a session, and a column of cards (the board itself:
``dashboard.board``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from roles.registry import registry
from sessions_app.dashboard.formatting import (
    RoleBadge,
    Stamp,
    duration_text,
    plan_progress,
    role_badge,
    stamp_of,
)
from sessions_app.dashboard.jobs import JOB_LABELS
from sessions_app.dashboard.runs.shapes import run_end_text
from sessions_app.models import AgentKind, AgentSession, RunStatus

RUN_LABELS = dict(RunStatus.choices)
AGENT_LABELS = dict(AgentKind.choices)


@dataclass(frozen=True)
class BoardCard:
    """One session on the board."""

    id: str
    title: str
    role: RoleBadge
    since: Stamp
    in_role: str
    last_reason: str
    owner: str
    status: str
    status_label: str
    risk_tier: str
    plan_done: int
    plan_total: int
    changes: int
    job_status: str = ""
    job_label: str = ""
    run_status: str = ""
    run_label: str = ""
    run_end: str = ""  # how a run that did not succeed ended, and why (its code, message)
    # An outside agent's session (issue 43): its kind ("claude-code", "codex", "other")
    # and name; empty for a session acode's own agent works in.
    agent: str = ""
    agent_label: str = ""


@dataclass(frozen=True)
class BoardColumn:
    """One role's column of cards."""

    role: RoleBadge
    cards: list[BoardCard]
    total: int

    @property
    def more(self) -> int:
        return self.total - len(self.cards)


def board_card(session: AgentSession, now: datetime) -> BoardCard:
    """A session's card; ``session`` comes annotated from ``selectors.board.board_cards``."""
    done, total = plan_progress(session.plan)
    job_status = session.latest_job_status or ""  # type: ignore[attr-defined]
    run_status = session.latest_run_status or ""  # type: ignore[attr-defined]
    ended = (session.latest_run_code, session.latest_run_message)  # type: ignore[attr-defined]
    agent = session.outside_agent or ""  # type: ignore[attr-defined]
    return BoardCard(
        id=str(session.id),
        title=session.title,
        role=role_badge(registry.by_id(session.current_role_id).slug),
        since=stamp_of(session.role_since),
        in_role=duration_text((now - session.role_since).total_seconds()),
        last_reason=session.last_reason,
        owner=session.owner.get_username(),
        status=session.status,
        status_label=session.get_status_display(),
        risk_tier=session.risk_tier,
        plan_done=done,
        plan_total=total,
        changes=session.changes_count,  # type: ignore[attr-defined]
        job_status=job_status,
        job_label=JOB_LABELS.get(job_status, ""),
        run_status=run_status,
        run_label=RUN_LABELS.get(run_status, ""),
        run_end=run_end_text(run_status, ended[0] or "", ended[1] or ""),
        agent=agent,
        agent_label=AGENT_LABELS.get(agent, ""),
    )
