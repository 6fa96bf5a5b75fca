"""Read-only helpers for the dashboard: view models, filters and fragment rendering.

The HTML views (``views.py``) and the websocket consumers (``consumers.py``) both render
through the functions here, from the same partial templates, so a page and a push never
drift apart. Nothing here writes: state changes go through ``sessions_app.services``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any
from urllib.parse import parse_qs, urlencode

from django import forms
from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.template.loader import render_to_string
from django.utils import timezone

from roles.registry import RoleDef, current_stamp, registry
from sessions_app.models import (
    AgentSession,
    AuditEvent,
    AuditEventType,
    AuditHead,
    Job,
    JobEventKind,
    JobStatus,
    SessionStatus,
    StepStatus,
)
from sessions_app.selectors import (
    TARGET_SHARES,
    can_view_all,
    session_can_act,
    session_list,
    time_in_roles,
    usage,
)
from sessions_app.services import transitions_from

# Websocket paths (routed in acode/routing.py); the pages connect to them with htmx's ws extension.
BOARD_SOCKET_PATH = "/ws/board/"


def session_socket_path(session_id: Any) -> str:
    return f"/ws/sessions/{session_id}/"


BOARD_TEMPLATE = "dashboard/board.html"
SESSION_TEMPLATE = "dashboard/session.html"

# Cards shown per board column; the rest are counted ("and 12 more").
COLUMN_LIMIT = 60
# Diff lines shown per pending change before the rest is summarised.
DIFF_LINE_LIMIT = 400
TIMELINE_LIMIT = 12


# -- roles ----------------------------------------------------------------------------
@dataclass(frozen=True)
class RoleBadge:
    """A role as a coloured badge: name, colour and a readable text colour on it."""

    slug: str
    name: str
    colour: str
    ink: str


def _ink_for(colour: str) -> str:
    """Dark or white text, whichever reads better on ``colour`` (WCAG relative luminance)."""
    try:
        channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    except ValueError:
        return "#ffffff"
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return "#111827" if luminance > 0.4 else "#ffffff"


def badge_of(role: RoleDef) -> RoleBadge:
    return RoleBadge(role.slug, role.name, role.spec.colour, _ink_for(role.spec.colour))


def role_badge(slug: str) -> RoleBadge:
    """The badge of a stored role slug; an unknown slug (deleted role) gets a grey badge."""
    try:
        return badge_of(registry.get(slug))
    except Exception:  # an audit row may name a role that no longer exists
        return RoleBadge(slug, slug or "—", "#94a3b8", "#111827")


def duration_text(seconds: float) -> str:
    """A short human duration: ``45s``, ``12m``, ``3h 04m``, ``2d 5h``."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, _ = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def data_version() -> tuple[int, str]:
    """Moves on every committed change the dashboard shows: the audit chain's head (every
    service write appends an audit event in its transaction) and the role registry's
    stamp (every change to role data moves it)."""
    last_seq = AuditHead.objects.filter(pk=1).values_list("last_seq", flat=True).first()
    return (last_seq or 0, current_stamp())


@dataclass(frozen=True)
class Stamp:
    """A moment, formatted for the page: machine-readable, full and short."""

    iso: str
    full: str
    short: str


def stamp_of(moment: datetime) -> Stamp:
    local = timezone.localtime(moment)
    return Stamp(
        local.isoformat(),
        f"{local:%Y-%m-%d %H:%M:%S} {local.tzname() or ''}".strip(),
        f"{local:%b} {local.day}, {local:%H:%M}",
    )


# -- who is looking -------------------------------------------------------------------
@dataclass(frozen=True)
class Viewer:
    """What decides which sessions a user sees; equal viewers see the same board."""

    user_id: int
    view_all: bool

    @property
    def scope(self) -> str:
        return "all" if self.view_all else f"owner:{self.user_id}"

    def sees(self, owner_id: int) -> bool:
        return self.view_all or owner_id == self.user_id


def viewer_for(user: User) -> Viewer:
    return Viewer(user_id=int(user.pk), view_all=can_view_all(user))


# -- board ----------------------------------------------------------------------------
@dataclass(frozen=True)
class BoardFilters:
    """Search and filters of the board; the page URL and its websocket URL carry the same."""

    q: str = ""
    role: str = ""
    owner: str = ""
    status: str = ""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> BoardFilters:
        def one(name: str) -> str:
            value = data.get(name, "")
            if isinstance(value, list):
                value = value[0] if value else ""
            return str(value).strip()[:200]

        status = one("status")
        return cls(
            q=one("q"),
            role=one("role"),
            owner=one("owner"),
            status=status if status in SessionStatus.values else "",
        )

    @classmethod
    def from_query_string(cls, query_string: bytes | str) -> BoardFilters:
        if isinstance(query_string, bytes):
            query_string = query_string.decode("latin-1")
        return cls.from_mapping(parse_qs(query_string))

    @property
    def active(self) -> bool:
        return bool(self.q or self.role or self.owner or self.status)

    def as_query(self) -> str:
        return urlencode({k: v for k, v in self.__dict__.items() if v})

    def role_slugs(self) -> list[str]:
        """The columns shown: every role, or the filtered one."""
        roles = registry.list_roles()
        if not self.role:
            return [r.slug for r in roles]
        wanted = self.role.lower()
        return [r.slug for r in roles if wanted in (r.slug.lower(), r.name.lower())]


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


@dataclass(frozen=True)
class BoardColumn:
    """One role's column of cards."""

    role: RoleBadge
    cards: list[BoardCard]
    total: int

    @property
    def more(self) -> int:
        return self.total - len(self.cards)


def _plan_progress(plan: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    done = sum(1 for s in plan if s.get("status") in (StepStatus.DONE, StepStatus.SKIPPED))
    return done, len(plan)


def board_queryset(user: User, filters: BoardFilters) -> QuerySet[AgentSession]:
    """Visible sessions matching the filters (role filtering is done by column)."""
    return (
        session_list(
            user=user,
            status=filters.status or None,
            owner=filters.owner or None,
            text=filters.q or None,
        )
        .annotate(
            changes_count=Count("pending_changes"),
            latest_job_status=Subquery(
                Job.objects.filter(session=OuterRef("pk"))
                .order_by("-created_at")
                .values("status")[:1]
            ),
        )
        .order_by("-role_since")
    )


def board_columns(
    user: User, filters: BoardFilters, only: Iterable[str] | None = None
) -> list[BoardColumn]:
    """The board's columns (all shown ones, or just ``only``) with their cards."""
    slugs = filters.role_slugs()
    if only is not None:
        wanted = set(only)
        slugs = [s for s in slugs if s in wanted]
    if not slugs:
        return []
    now = timezone.now()
    qs = board_queryset(user, filters).filter(current_role__slug__in=slugs)
    by_role: dict[str, list[BoardCard]] = {s: [] for s in slugs}
    totals = dict.fromkeys(slugs, 0)
    for session in qs.iterator(chunk_size=500):
        slug = session.current_role.slug
        totals[slug] += 1
        if len(by_role[slug]) >= COLUMN_LIMIT:
            continue
        done, total = _plan_progress(session.plan)
        by_role[slug].append(
            BoardCard(
                id=str(session.id),
                title=session.title,
                role=role_badge(slug),
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
                job_status=session.latest_job_status or "",  # type: ignore[attr-defined]
                job_label=JOB_LABELS.get(session.latest_job_status or "", ""),  # type: ignore[attr-defined]
            )
        )
    return [BoardColumn(role_badge(s), by_role[s], totals[s]) for s in slugs]


def board_owner_choices(user: User) -> list[str]:
    """Owners of the sessions the user may see, for the owner filter."""
    qs = session_list(user=user).order_by().values_list("owner__username", flat=True).distinct()
    return sorted(set(qs))


def render_board_columns(columns: Sequence[BoardColumn]) -> str:
    """The columns as pushed over the websocket: each one's root has its stable id."""
    return "".join(
        render_to_string(f"{BOARD_TEMPLATE}#column", {"column": column}) for column in columns
    )


def render_board(user: User, filters: BoardFilters) -> str:
    """The whole board body, sent on connect so a reconnecting page resynchronises."""
    return render_to_string(
        f"{BOARD_TEMPLATE}#columns", {"columns": board_columns(user, filters), "filters": filters}
    )


def render_board_update(
    user: User, viewer: Viewer, filters: BoardFilters, session_id: str, from_role: str | None
) -> str:
    """What a board shows after an event in one session: the columns it left and entered.

    Empty when the viewer may not see the session, or none of those columns are shown.
    """
    row = (
        AgentSession.objects.filter(pk=session_id)
        .values_list("owner_id", "current_role__slug")
        .first()
    )
    if row is None or not viewer.sees(row[0]):
        return ""
    affected = {row[1]}
    if from_role:
        affected.add(from_role)
    return render_board_columns(board_columns(user, filters, only=affected))


# -- session page ---------------------------------------------------------------------
SESSION_FRAGMENTS: tuple[str, ...] = (
    "header",
    "transitions",
    "timeline",
    "plan",
    "changes",
    "jobs",
    "time",
)
JOB_LABELS = dict(JobStatus.choices)
JOBS_SHOWN = 5
JOB_EVENTS_SHOWN = 200

# Which fragments of the session page an event can change. Kinds not listed (such as
# the job events still to come) re-render every fragment: correct first, then cheap.
SESSION_FRAGMENTS_BY_KIND: dict[str, tuple[str, ...]] = {
    "session.created": ("header",),
    "session.updated": ("header",),
    "role.changed": ("header", "transitions", "timeline", "time"),
    "plan.updated": ("plan", "transitions"),
    "changes.updated": ("changes", "transitions"),
    # Sent to the board group only; the session page gets job events as "job.event".
    "job.status": (),
    "job.event": ("jobs",),
}


def fragments_for(kind: str) -> tuple[str, ...]:
    return SESSION_FRAGMENTS_BY_KIND.get(kind, SESSION_FRAGMENTS)


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


class SessionPage:
    """Everything the session page shows, read lazily: a fragment reads only what it needs."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session
        self.timeline_since: list[TimelineEntry] = []

    @classmethod
    def load(cls, session_id: Any) -> SessionPage | None:
        session = (
            AgentSession.objects.select_related("current_role", "owner", "role_version")
            .filter(pk=session_id)
            .first()
        )
        return cls(session) if session is not None else None

    @cached_property
    def role(self) -> RoleBadge:
        return role_badge(self.session.current_role.slug)

    @cached_property
    def in_role(self) -> str:
        return duration_text((timezone.now() - self.session.role_since).total_seconds())

    @cached_property
    def since(self) -> Stamp:
        return stamp_of(self.session.role_since)

    @cached_property
    def opened(self) -> Stamp:
        return stamp_of(self.session.created_at)

    @cached_property
    def _history(self) -> list[tuple[int, str | None, str, str, str, datetime]]:
        return list(
            self.session.transitions.order_by("seq").values_list(
                "seq", "from_role__slug", "to_role__slug", "reason", "actor", "created_at"
            )
        )

    @cached_property
    def timeline(self) -> list[TimelineEntry]:
        """Newest first."""
        entries = [
            TimelineEntry(
                seq,
                role_badge(from_slug) if from_slug else None,
                role_badge(to_slug),
                reason,
                actor,
                stamp_of(at),
            )
            for seq, from_slug, to_slug, reason, actor, at in self._history[-TIMELINE_LIMIT:]
        ]
        entries.reverse()
        return entries

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
            for i, step in enumerate(self.session.plan or [], start=1)
        ]
        done, _ = _plan_progress(self.session.plan or [])
        return PlanView(steps, done)

    @cached_property
    def changes(self) -> list[ChangeView]:
        out = []
        for change in self.session.pending_changes.select_related("role").order_by("path"):
            lines = diff_lines(change.diff)
            out.append(
                ChangeView(
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
            )
        return out

    @cached_property
    def time_shares(self) -> list[RoleShare]:
        rows = [(self.session.pk, to_slug, at) for _, _, to_slug, _, _, at in self._history]
        seconds = time_in_roles(rows)
        total = sum(seconds.values())
        return [
            RoleShare(
                role_badge(slug),
                value,
                duration_text(value),
                round(100 * value / total, 1) if total else 0.0,
            )
            for slug, value in sorted(seconds.items(), key=lambda kv: -kv[1])
        ]

    @cached_property
    def jobs(self) -> list[JobView]:
        return session_jobs(self.session.pk)

    @cached_property
    def total_time(self) -> str:
        return duration_text(sum(s.seconds for s in self.time_shares))


@dataclass(frozen=True)
class JobEventView:
    seq: int
    kind: str
    label: str
    tone: str  # llm, tool, denied, result, status, limit, note
    summary: str
    detail: str
    at: Stamp


@dataclass(frozen=True)
class JobView:
    id: str
    short_id: str
    role: RoleBadge
    request: str
    status: str
    status_label: str
    live: bool
    llm_calls: int
    tokens: int
    model: str
    provider: str
    result: str
    error_code: str
    error_message: str
    created: Stamp
    events: list[JobEventView]
    denied: int


def _job_event_view(seq: int, kind: str, data: Mapping[str, Any], at: datetime) -> JobEventView:
    label = dict(JobEventKind.choices).get(kind, kind)
    tone, summary, detail = "note", "", ""
    if kind == JobEventKind.LLM_REQUEST:
        tone, summary = (
            "llm",
            f"asking the model ({data.get('message_count', 0)} messages, tools: {', '.join(data.get('tools', [])) or 'none'})",
        )
    elif kind == JobEventKind.LLM_RESPONSE:
        calls = data.get("tool_calls") or []
        tone = "llm"
        summary = f"{data.get('tokens_in', 0)} tokens in, {data.get('tokens_out', 0)} out"
        summary += (
            f", {len(calls)} tool call{'s' if len(calls) != 1 else ''}"
            if calls
            else ", final answer"
        )
        detail = str(data.get("content", ""))[:400]
    elif kind == JobEventKind.TOOL_CALL:
        tone, summary, detail = (
            "tool",
            str(data.get("name", "")),
            str(data.get("arguments", ""))[:400],
        )
    elif kind == JobEventKind.TOOL_RESULT:
        tone, summary, detail = (
            "result",
            f"{data.get('name', '')} {data.get('target', '')}".strip(),
            str(data.get("output", ""))[:400],
        )
    elif kind == JobEventKind.TOOL_DENIED:
        tone, summary, detail = (
            "denied",
            f"{data.get('name', '')}: {data.get('code', '')}",
            str(data.get("reason", "")),
        )
    elif kind == JobEventKind.STATUS:
        tone = "status"
        summary = JOB_LABELS.get(str(data.get("status", "")), str(data.get("status", "")))
        detail = " ".join(str(x) for x in (data.get("code"), data.get("message")) if x)
    elif kind == JobEventKind.LIMIT:
        tone, summary = "limit", str(data.get("reason") or data.get("limit", ""))
    elif kind == JobEventKind.PROMPT:
        summary = " + ".join(data.get("components", []))
        detail = "; ".join(data.get("notes", []))
    elif kind == JobEventKind.CONTEXT:
        files = [f for f in data.get("files", []) if not str(f.get("path", "")).startswith("(")]
        summary = (
            f"{data.get('strategy', '')}: {data.get('token_count', 0)} tokens, {len(files)} files"
        )
    else:
        summary = str(data.get("message", ""))
    return JobEventView(seq, kind, label, tone, summary, detail, stamp_of(at))


def session_jobs(session_id: Any) -> list[JobView]:
    """The newest jobs of a session; the events of the newest one (the live stream)."""
    jobs = list(Job.objects.filter(session_id=session_id).order_by("-created_at")[:JOBS_SHOWN])
    out = []
    for index, job in enumerate(jobs):
        events: list[JobEventView] = []
        denied = job.events.filter(kind=JobEventKind.TOOL_DENIED).count()
        if index == 0:
            rows = job.events.order_by("-seq").values_list("seq", "kind", "data", "created_at")[
                :JOB_EVENTS_SHOWN
            ]
            events = [_job_event_view(*row) for row in reversed(list(rows))]
        out.append(
            JobView(
                id=str(job.pk),
                short_id=str(job.pk)[:8],
                role=role_badge(registry.by_id(job.role_id).slug),
                request=job.request,
                status=job.status,
                status_label=JOB_LABELS.get(job.status, job.status),
                live=not job.is_final,
                llm_calls=job.llm_calls,
                tokens=job.tokens_in + job.tokens_out,
                model=job.model,
                provider=job.provider,
                result=job.result,
                error_code=job.error_code,
                error_message=job.error_message,
                created=stamp_of(job.created_at),
                events=events,
                denied=denied,
            )
        )
    return out


def session_access(user: User, session_id: Any) -> tuple[bool, bool]:
    """(may see, may act) for a user and a session id; (False, False) if it does not exist."""
    session = session_list(user=user).filter(pk=session_id).first()
    if session is None:
        return False, False
    return True, session_can_act(user, session)


def render_session_fragments(
    session_id: Any, names: Iterable[str], *, can_act: bool, timeline_after: int = 0
) -> tuple[str, int]:
    """Session page fragments for a push, and the newest transition they include.

    ``can_act`` picks the transition-buttons variant; nothing else in them depends on who
    is looking, so one rendering serves every socket of the same variant. A page that has
    the timeline up to transition ``timeline_after`` gets only the newer entries.
    """
    page = SessionPage.load(session_id)
    if page is None:
        return "", 0
    context = {"page": page, "can_act": can_act}
    wanted = set(names)
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


# -- roles page -----------------------------------------------------------------------
@dataclass(frozen=True)
class MatrixCell:
    allowed: bool
    reason: str
    missing: tuple[str, ...]


@dataclass(frozen=True)
class MatrixRow:
    tool: str
    description: str
    required: tuple[str, ...]
    enabled: bool
    cells: list[MatrixCell]


@dataclass(frozen=True)
class RoleCard:
    role: RoleBadge
    description: str
    capabilities: tuple[str, ...]
    constraints: tuple[str, ...]
    prompt_key: str
    prompt_component: str
    context_strategy: str
    preferred_model: str
    fallback_model: str
    default_model: str
    queue: str
    max_llm_calls: int
    max_tokens: int
    timeout_seconds: int
    parent: RoleBadge | None
    permissions: tuple[str, ...]
    tools: tuple[str, ...]
    write_paths: tuple[str, ...]
    command_patterns: tuple[str, ...]
    version: int | None
    content_hash: str


@dataclass(frozen=True)
class RuleRow:
    from_role: RoleBadge
    to_role: RoleBadge
    condition: str
    explanation: str
    implicit: bool


def roles_overview() -> dict[str, Any]:
    """Role cards, the roles-by-tools matrix and the transition rules, from the registry."""
    roles = registry.list_roles()
    strategies = {
        "adaptive": "Adaptive",
        "broad": "Broad",
        "focused": "Focused",
        "change_focused": "Change-focused",
    }
    cards = [
        RoleCard(
            role=badge_of(r),
            description=r.spec.description,
            capabilities=r.spec.capabilities,
            constraints=r.spec.constraints,
            prompt_key=r.spec.prompt_key,
            prompt_component=r.prompt_component_key,
            context_strategy=strategies.get(r.spec.context_strategy, r.spec.context_strategy),
            preferred_model=r.spec.preferred_model,
            fallback_model=r.spec.fallback_model,
            default_model=str(settings.ACODE_LLM_DEFAULT_MODEL),
            queue=r.spec.queue,
            max_llm_calls=r.spec.max_llm_calls,
            max_tokens=r.spec.max_tokens,
            timeout_seconds=r.spec.timeout_seconds,
            parent=role_badge(r.spec.parent) if r.spec.parent else None,
            permissions=tuple(sorted(r.access.permissions)),
            tools=r.access.tools,
            write_paths=r.spec.write_paths,
            command_patterns=r.spec.command_patterns,
            version=r.version,
            content_hash=r.content_hash,
        )
        for r in roles
    ]
    matrix = []
    for tool in sorted(registry.tools(), key=lambda t: t.name):
        cells = []
        for r in roles:
            withheld = r.access.withheld_reason(tool.name)
            if withheld is None:
                cells.append(MatrixCell(True, "", ()))
            else:
                cells.append(MatrixCell(False, withheld.reason, withheld.missing_permissions))
        matrix.append(
            MatrixRow(tool.name, tool.description, tool.required_permissions, tool.enabled, cells)
        )
    order = {r.slug: i for i, r in enumerate(roles)}
    rules = sorted(
        registry.all_rules(),
        key=lambda rule: (order.get(rule.from_slug, 99), order.get(rule.to_slug, 99)),
    )
    return {
        "roles": cards,
        "role_badges": [c.role for c in cards],
        "matrix": matrix,
        "rules": [
            RuleRow(
                role_badge(rule.from_slug),
                role_badge(rule.to_slug),
                rule.condition_text,
                rule.explanation,
                rule.implicit,
            )
            for rule in rules
        ],
    }


# -- audit ----------------------------------------------------------------------------
class AuditFilterForm(forms.Form):
    """The audit page's filters; the same names as the export API's query parameters."""

    event_type = forms.ChoiceField(
        required=False, choices=[("", "Any event"), *AuditEventType.choices]
    )
    session = forms.UUIDField(required=False)
    role = forms.CharField(required=False, max_length=64)
    actor = forms.CharField(required=False, max_length=150)
    since = forms.DateTimeField(
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    until = forms.DateTimeField(
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )

    def filter(self, qs: QuerySet[AuditEvent]) -> QuerySet[AuditEvent]:
        data = self.cleaned_data if self.is_valid() else {}
        if data.get("event_type"):
            qs = qs.filter(event_type=data["event_type"])
        if data.get("session"):
            qs = qs.filter(session_id=data["session"])
        if data.get("role"):
            qs = qs.filter(role__iexact=data["role"])
        if data.get("actor"):
            qs = qs.filter(actor=data["actor"])
        if data.get("since"):
            qs = qs.filter(created_at__gte=data["since"])
        if data.get("until"):
            qs = qs.filter(created_at__lt=data["until"])
        return qs

    def query(self) -> str:
        """The valid filters as a query string, for pagination and the export links."""
        if not self.is_valid():
            return ""
        params = {}
        for name, value in self.cleaned_data.items():
            if value in (None, ""):
                continue
            params[name] = value.isoformat() if isinstance(value, datetime) else str(value)
        return urlencode(params)


@dataclass(frozen=True)
class AuditRow:
    seq: int
    event_type: str
    event_label: str
    session_id: str | None
    role: RoleBadge | None
    actor: str
    target: str
    result: str
    details: str
    at: datetime
    hash: str


def audit_rows(events: Iterable[AuditEvent]) -> list[AuditRow]:
    labels = dict(AuditEventType.choices)
    return [
        AuditRow(
            seq=e.seq,
            event_type=e.event_type,
            event_label=str(labels.get(e.event_type, e.event_type)),
            session_id=str(e.session_id) if e.session_id else None,
            role=role_badge(e.role) if e.role else None,
            actor=e.actor,
            target=e.target,
            result=e.result,
            details=json.dumps(e.details, ensure_ascii=False, sort_keys=True) if e.details else "",
            at=e.created_at,
            hash=e.hash,
        )
        for e in events
    ]


# -- usage ----------------------------------------------------------------------------
@dataclass(frozen=True)
class UsageBar:
    """One row of the usage chart, with its geometry in SVG units."""

    role: RoleBadge
    y: int
    share: float
    percent: str
    duration: str
    target: tuple[float, float] | None
    target_text: str
    verdict: str  # within, below, above, none
    bar_width: float
    band_x: float
    band_width: float


@dataclass(frozen=True)
class UsageTick:
    label: str
    x: float


USAGE_ROW_HEIGHT = 44
USAGE_PLOT_WIDTH = 500


def usage_chart(user: User) -> dict[str, Any]:
    """The time-in-role distribution of the sessions the user sees, laid out as a bar chart."""
    data = usage(session_list(user=user))
    shares = {row["role"]: row for row in data["roles"]}
    # Every role with time spent, plus the ones the spec sets a target for (even at 0 %).
    slugs = [row["role"] for row in data["roles"]]
    slugs += [slug for slug in TARGET_SHARES if slug not in shares]
    scale = USAGE_PLOT_WIDTH
    bars = []
    for i, slug in enumerate(slugs):
        row = shares.get(slug, {"share": 0.0, "seconds": 0.0})
        share = float(row["share"])
        target = TARGET_SHARES.get(slug)
        if target is None:
            verdict = "none"
        elif share < target[0]:
            verdict = "below"
        elif share > target[1]:
            verdict = "above"
        else:
            verdict = "within"
        bars.append(
            UsageBar(
                role=role_badge(slug),
                y=i * USAGE_ROW_HEIGHT,
                share=share,
                percent=f"{share * 100:.1f}%",
                duration=duration_text(float(row["seconds"])),
                target=target,
                target_text=f"{target[0] * 100:.0f}\u2013{target[1] * 100:.0f}%" if target else "",
                verdict=verdict,
                bar_width=round(share * scale, 2),
                band_x=round(target[0] * scale, 2) if target else 0.0,
                band_width=round((target[1] - target[0]) * scale, 2) if target else 0.0,
            )
        )
    height = max(1, len(bars)) * USAGE_ROW_HEIGHT
    return {
        "bars": bars,
        "total": duration_text(float(data["total_seconds"])),
        "total_seconds": data["total_seconds"],
        "height": height,
        "plot_width": USAGE_PLOT_WIDTH,
        "value_x": USAGE_PLOT_WIDTH + 12,
        "tick_y": height + 18,
        "svg_height": height + 36,
        "ticks": [UsageTick(f"{p}%", p * scale / 100) for p in (0, 25, 50, 75, 100)],
    }


__all__ = [
    "AuditFilterForm",
    "BoardFilters",
    "SessionPage",
    "Viewer",
    "board_columns",
    "fragments_for",
    "render_board",
    "render_board_update",
    "render_session_fragments",
    "roles_overview",
    "session_access",
    "usage_chart",
    "viewer_for",
]
