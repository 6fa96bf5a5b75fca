"""The session page: one session's role, the transitions allowed now, its run (``runs``),
timeline, plan, pending changes, jobs and time in role. Its panels are plain values for the
templates; ``SessionPage`` reads the session into them, lazily.

It is live over ``/ws/sessions/<id>/`` (``sessions_app.consumers.SessionConsumer``): the
view and the socket render the same partials of ``dashboard/session.html``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, cast
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from acode.errors import AcodeError
from sessions_app.dashboard.deliveries import DeliveredPanel, delivered_panel
from sessions_app.dashboard.formatting import (
    DARK_INK,
    RoleBadge,
    Stamp,
    duration_text,
    plan_progress,
    role_badge,
    role_permissions,
    stamp_of,
)
from sessions_app.dashboard.jobs import JobView, session_jobs
from sessions_app.dashboard.live import back_to, session_socket_path
from sessions_app.dashboard.runs.panel import run_panel
from sessions_app.dashboard.runs.shapes import RunPanel
from sessions_app.dashboard.search import SearchIndexPanel, search_index_panel
from sessions_app.models import (
    AgentSession,
    PendingChange,
    RiskTier,
    RunStatus,
    SessionStatus,
    StepStatus,
    ToolConsent,
)
from sessions_app.permissions import SessionAction, can_act, can_see, job_for, session_for
from sessions_app.selectors.consents import session_consents
from sessions_app.selectors.sessions import (
    HistoryRow,
    session_for_page,
    session_history_rows,
    session_latest_run_state,
    session_pending_changes,
)
from sessions_app.selectors.time_in_role import (
    Interval,
    overlap_seconds,
    time_in_roles,
    waiting_intervals,
    waiting_seconds,
)
from sessions_app.services import archive, jobs, transitions
from sessions_app.services.event_catalog import SESSION_PAGE, rerenders
from sessions_app.services.transitions import transitions_from

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
    suggested_for: tuple[str, ...] = ()  # the agent's routing keywords the task names


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
    """Seconds per role (from ``selectors.time_in_role``) as shares, largest first; time
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


SESSION_TEMPLATE = SESSION_PAGE.template
TIMELINE_LIMIT = 12

SESSION_FRAGMENTS: tuple[str, ...] = SESSION_PAGE.fragments


def fragments_for(kind: str) -> tuple[str, ...]:
    """The session page's fragments an event of ``kind`` can change (the event catalog's;
    every fragment for a kind it does not know)."""
    return rerenders(kind).session_page


class SessionPage:
    """Everything the session page shows, read lazily: a fragment reads only what it needs."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session
        self.timeline_since: list[TimelineEntry] = []

    @classmethod
    def load(cls, session_id: Any) -> SessionPage | None:
        session = session_for_page(session_id)
        return cls(session) if session is not None else None

    @cached_property
    def role(self) -> RoleBadge:
        return role_badge(self.session.current_role.slug)

    @property
    def archived(self) -> bool:
        """Archived: read-only until restored; the page offers Restore and nothing else."""
        return self.session.status == SessionStatus.ARCHIVED

    @cached_property
    def role_permissions(self) -> list[str]:
        """What the current role may do (its effective permissions), for the header."""
        return role_permissions(self.session.current_role.slug)

    @cached_property
    def _now(self) -> datetime:
        return timezone.now()

    @cached_property
    def waiting(self) -> list[Interval]:
        """When the session waited for a person (an answer, an approval)."""
        return waiting_intervals([self.session.pk]).get(self.session.pk, [])

    def use_run_panel(self, panel: RunPanel) -> None:
        """Take the latest run's tier and status from the run panel, which read that run."""
        run = panel.run
        self.__dict__["_latest_run"] = (run.effective_tier, run.status) if run else None

    @cached_property
    def _latest_run(self) -> tuple[str, str] | None:
        return session_latest_run_state(self.session)

    @cached_property
    def risk(self) -> RiskBadge:
        """The latest run's tier (risk signals may have raised it), else the declared one."""
        if self._latest_run is None:
            tier = self.session.risk_tier
            return RiskBadge(tier, RISK_LABELS.get(tier, tier), "The session's declared risk tier")
        tier = self._latest_run[0]
        return RiskBadge(
            tier,
            RISK_LABELS.get(tier, tier),
            "The risk tier of the session's latest run (its signals may raise it)",
        )

    @cached_property
    def waiting_now(self) -> WaitingView | None:
        """What the session waits for now, since when (None: it does not wait)."""
        status = self._latest_run[1] if self._latest_run else ""
        what = WAITING_FOR.get(status)
        open_spans = [start for start, end in self.waiting if end is None]
        if what is None or not open_spans:
            return None
        start = max(open_spans)
        return WaitingView(
            what, stamp_of(start), duration_text((self._now - start).total_seconds())
        )

    @cached_property
    def _seconds_in_role(self) -> tuple[float, float]:
        """(working, waiting) seconds since the session entered its role."""
        since = self.session.role_since
        waited = overlap_seconds(since, self._now, self.waiting, self._now)
        return (self._now - since).total_seconds() - waited, waited

    @cached_property
    def in_role(self) -> str:
        """Time in the current role, not counting time spent waiting for a person."""
        return duration_text(self._seconds_in_role[0])

    @cached_property
    def waited_in_role(self) -> str:
        waited = self._seconds_in_role[1]
        return duration_text(waited) if waited >= 1 else ""

    @cached_property
    def in_role_since(self) -> Stamp:
        """The moment a ticking counter starts from to show ``in_role`` (later than
        ``since`` by the time spent waiting)."""
        return stamp_of(self._now - timedelta(seconds=self._seconds_in_role[0]))

    @cached_property
    def since(self) -> Stamp:
        return stamp_of(self.session.role_since)

    @cached_property
    def opened(self) -> Stamp:
        return stamp_of(self.session.created_at)

    @cached_property
    def _history(self) -> list[HistoryRow]:
        return session_history_rows(self.session)

    @cached_property
    def timeline(self) -> list[TimelineEntry]:
        """The newest transitions, newest first."""
        return timeline_entries(self._history[-TIMELINE_LIMIT:])

    @cached_property
    def transition_count(self) -> int:
        return len(self._history)

    @cached_property
    def newest_seq(self) -> int:
        return self._history[-1][0] if self._history else 0

    def timeline_after(self, seq: int) -> list[TimelineEntry] | None:
        """Entries newer than ``seq``, newest first; None when a full timeline is due
        (the page has none yet, or more than a timeline's worth is new)."""
        if seq <= 0 or self.newest_seq - seq > TIMELINE_LIMIT:
            return None
        self.timeline_since = [e for e in self.timeline if e.seq > seq]
        return self.timeline_since

    @cached_property
    def transitions(self) -> list[TransitionOption]:
        return [
            TransitionOption(
                to_role=role_badge(option.rule.to_slug),
                allowed_now=option.allowed_now,
                condition=option.rule.condition_text,
                unmet=option.unmet,
                explanation=option.rule.explanation,
                suggested_for=option.suggested_for,
            )
            for option in transitions_from(self.session)
        ]

    @cached_property
    def allowed_transitions(self) -> list[TransitionOption]:
        return [t for t in self.transitions if t.allowed_now]

    @cached_property
    def blocked_transitions(self) -> list[TransitionOption]:
        return [t for t in self.transitions if not t.allowed_now]

    @cached_property
    def plan(self) -> PlanView:
        return plan_view(self.session.plan or [])

    @cached_property
    def changes(self) -> list[ChangeView]:
        return [change_view(change) for change in session_pending_changes(self.session)]

    @cached_property
    def time_shares(self) -> list[RoleShare]:
        # The history is already read for the timeline: the selector sums it, no re-read.
        rows = [(self.session.pk, to_slug, at) for _, _, to_slug, _, _, at in self._history]
        waits = {self.session.pk: self.waiting}
        seconds = time_in_roles(rows, now=self._now, waiting=waits)
        return role_shares(seconds, waiting=waiting_seconds(waits, now=self._now))

    @cached_property
    def delivered(self) -> DeliveredPanel:
        return delivered_panel(self.session)

    @cached_property
    def search_index(self) -> SearchIndexPanel:
        return search_index_panel(self.session)

    @cached_property
    def consents(self) -> list[ToolConsent]:
        # Only a job that has not ended waits for a person (no query while none runs), or an
        # outside agent's hook (its session's workspace is not acode's; issue 43).
        waits = not self.session.workspace_managed or any(j.live for j in self.jobs)
        return session_consents(self.session, limit=5) if waits else []

    @cached_property
    def jobs(self) -> list[JobView]:
        return session_jobs(self.session.pk)

    @cached_property
    def total_time(self) -> str:
        return duration_text(sum(s.seconds for s in self.time_shares))


def may_act(user: User, session: AgentSession) -> bool:
    """Whether the page offers the user its buttons: may they act on the session (the
    one decision's answer, whatever the session's state now)."""
    return can_act(user, session)


def session_access(user: User, session_id: Any) -> tuple[bool, bool]:
    """(may see, may act) for a user and a session id (a socket connecting); (False,
    False) if it does not exist."""
    try:
        session = session_for(user, session_id)
    except AcodeError:  # none, or not theirs to see
        return False, False
    return True, may_act(user, session)


def render_session_fragments(
    session_id: Any,
    names: Iterable[str],
    *,
    can_act: bool,
    timeline_after: int = 0,
    user: Any = None,
) -> tuple[str, int]:
    """Session page fragments for a push, and the newest transition they include.

    ``can_act`` picks the transition-buttons variant; the run panel's buttons are those
    ``user`` may press (``runs.run_panel_variant`` tells which users see the same). A page
    that has the timeline up to transition ``timeline_after`` gets only the newer entries.
    """
    page = SessionPage.load(session_id)
    if page is None:
        return "", 0
    wanted = set(names)
    context: dict[str, Any] = {"page": page, "can_act": can_act}
    if "run" in wanted:
        context["runs"] = run_panel(page.session, user)
        page.use_run_panel(context["runs"])
    parts = []
    for name in SESSION_FRAGMENTS:
        if name not in wanted:
            continue
        if name == "timeline" and timeline_after:
            newer = page.timeline_after(timeline_after)
            if newer == []:
                continue  # nothing new: the page's timeline is current
            if newer is not None:
                name = "timeline-new"
        parts.append(render_to_string(f"{SESSION_TEMPLATE}#{name}", context))
    return "".join(parts), page.newest_seq


def _visible_page(user: User, pk: UUID) -> SessionPage:
    page = SessionPage.load(pk)
    if page is None or not can_see(user, page.session):
        raise Http404("No such session, or it is not yours to see.")
    return page


@login_required
@require_GET
def session_detail(request: HttpRequest, pk: UUID) -> HttpResponse:
    """One session: role, transitions allowed now, timeline, plan, jobs, changes, time."""
    user = cast(User, request.user)
    page = _visible_page(user, pk)
    runs = run_panel(page.session, user)
    page.use_run_panel(runs)
    return render(
        request,
        SESSION_TEMPLATE,
        {
            "nav": "board",
            "page": page,
            "can_act": may_act(user, page.session),
            "runs": runs,
            "ws_url": session_socket_path(pk),
        },
    )


@login_required
@require_POST
def session_archiving(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Archive the session, or restore it (``restore`` in the form), through the service; a
    refusal comes back as a message."""
    user = cast(User, request.user)
    page = _visible_page(user, pk)
    restore = request.POST.get("restore") == "1"
    act = archive.session_restore if restore else archive.session_archive
    try:
        act(session=page.session, user=user)
    except AcodeError as error:
        messages.error(request, _refusal_text(error), error.code)
    else:
        messages.success(request, RESTORED if restore else ARCHIVED)
    return back_to(request, reverse("dashboard-session", kwargs={"pk": pk}))


@login_required
@require_POST
def job_resuming(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Resume a job that stopped at a limit, with a fresh budget, through the service; back
    to its session's page with what happened."""
    user = cast(User, request.user)
    try:
        job = job_for(user, pk, SessionAction.JOB_CREATE)
    except AcodeError as error:
        if error.code == "ACODE-API-404":
            raise Http404("No such job, or it is not yours to see.") from None
        messages.error(request, _refusal_text(error), error.code)
        return back_to(request, reverse("dashboard-board"))
    try:
        resumed = jobs.job_resume(job=job, user=user)
    except AcodeError as error:
        messages.error(request, _refusal_text(error), error.code)
    else:
        messages.success(request, f"Job {str(resumed.pk)[:8]} resumes it with a fresh budget.")
    return back_to(request, reverse("dashboard-session", kwargs={"pk": job.session_id}))


ARCHIVED = "Session archived: its files are freed, and it is read-only until restored."
RESTORED = "Session restored: its workspace is back, with every pending change."


def _refusal_text(error: AcodeError) -> str:
    suggestion = error.details.get("suggestion") if error.details else None
    return error.message if not suggestion else f"{error.message} {suggestion}."


@login_required
@require_POST
def session_transition(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Change the session's role through the service; a refusal comes back as a message."""
    user = cast(User, request.user)
    page = _visible_page(user, pk)
    back = HttpResponseRedirect(reverse("dashboard-session", kwargs={"pk": pk}))
    to_role = request.POST.get("to_role", "").strip()
    if not to_role:
        messages.error(request, "Choose the role to change to.", "ACODE-API-400")
        return back
    try:
        result = transitions.session_transition(
            session=page.session,
            to_role=to_role,
            reason=request.POST.get("reason", ""),
            user=user,
            expected_role=request.POST.get("expected_role", "").strip() or None,
            request_id=request.headers.get("X-Request-ID") or None,
        )
    except AcodeError as error:
        messages.error(request, _refusal_text(error), error.code)
        return back
    if result.changed:
        messages.success(request, result.message)
    else:
        messages.info(request, result.message)
    return back
