"""The session page's run panel: the session's orchestrated run as a pipeline of its
template's stages, the stages it executed, its questions, approval gate, risk and budget,
with the buttons the viewer may press; and the views behind those buttons.

The panel is one partial of ``dashboard/session.html`` (``#run``, root ``#run-panel``):
the page, the POST views below (htmx swaps their answer in) and the session websocket
(``sessions_app.consumers.SessionConsumer``, on ``run.*`` events) render the same one.
Views validate and ask ``sessions_app.permissions``; every change goes through
``sessions_app.services.runs``, whose refusals are shown in the panel with their codes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from acode.errors import AcodeError
from acode.inputs import has_forbidden_characters
from roles.registry import registry
from sessions_app.dashboard.deliveries import DeliveredView, delivered_view
from sessions_app.dashboard.formatting import (
    RoleBadge,
    Stamp,
    duration_text,
    role_badge,
    stamp_of,
)
from sessions_app.dashboard.jobs import job_panel
from sessions_app.models import (
    ACTIVE_RUN_STATUSES,
    AgentSession,
    ApprovalStatus,
    RiskTier,
    Run,
    RunStage,
    RunStatus,
    StagePurpose,
    StageStatus,
    WorkflowStage,
)
from sessions_app.permissions import (
    APPROVE_RUN_PERMISSION,
    SessionAction,
    action_refusal,
    run_can_answer,
    run_can_approve,
    run_can_cancel,
    runs_visible_to,
    sessions_visible_to,
)
from sessions_app.selectors import (
    Interval,
    overlap_seconds,
    run_commit,
    run_open_question,
    run_pending_approval,
    run_usage,
    runs_with_details,
)
from sessions_app.services import runs as run_services
from sessions_app.services.event_catalog import SESSION_PAGE

SESSION_TEMPLATE = SESSION_PAGE.template
RUN_PARTIAL = f"{SESSION_TEMPLATE}#run"
JOB_TEMPLATE = "dashboard/job.html"

RUN_LABELS = dict(RunStatus.choices)
STAGE_LABELS = dict(StageStatus.choices)
APPROVAL_LABELS = dict(ApprovalStatus.choices)
PURPOSE_NAMES: dict[str, str] = {
    StagePurpose.PLAN: "Plan",
    StagePurpose.EXPLORE: "Explore",
    StagePurpose.CODE: "Code",
    StagePurpose.TEST: "Test",
    StagePurpose.REVIEW: "Review",
    StagePurpose.APPROVAL: "Approval",
}
# Code, test and review repeat per plan step and per revision: the pipeline draws them as
# one loop.
LOOP_PURPOSES = frozenset({StagePurpose.CODE, StagePurpose.TEST, StagePurpose.REVIEW})
VERDICT_LABELS = {"approve": "Approved", "request_changes": "Changes requested"}
RISK_CHOICES = [(value, label) for value, label in RiskTier.choices]
EARLIER_RUNS_SHOWN = 5
# Test output shown per test stage (the engine keeps up to 4,000 characters).
EVIDENCE_CHARS = 4_000
# The POST views' text limits are the services' own; these stop what no service would take
# before it is even read into a query.
MAX_TEXT_CHARS = 20_000


# -- what the panel shows ------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    path: str
    line: int | None
    body: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.path and self.line else self.path


@dataclass(frozen=True)
class VerdictView:
    verdict: str
    label: str
    summary: str
    findings: list[Finding]


@dataclass(frozen=True)
class EvidenceView:
    ran: bool
    status: str
    command: str
    output: str
    summary: str
    findings: str  # an Explorer's findings


@dataclass(frozen=True)
class StageView:
    seq: int
    purpose: str
    purpose_name: str
    role: RoleBadge | None
    reason: str
    plan_step: int
    revision: int
    status: str
    status_label: str
    current: bool
    job_id: str
    job_short: str
    verdict: VerdictView | None
    evidence: EvidenceView | None
    started: Stamp
    took: str
    waited: str = ""  # time the stage waited for an answer, not counted in ``took``


@dataclass(frozen=True)
class PipelineNode:
    position: int
    purpose: str
    name: str
    role: RoleBadge | None
    state: str  # pending, current, done, failed
    times: int  # how often the stage ran (a revision runs code, test and review again)


@dataclass(frozen=True)
class PipelineGroup:
    loop: bool
    nodes: list[PipelineNode]


@dataclass(frozen=True)
class QuestionView:
    id: int
    asked_by: str
    question: str
    answer: str
    answered_by: str
    asked: Stamp
    answered: Stamp | None


@dataclass(frozen=True)
class ApprovalView:
    id: int
    digest: str
    short: str
    status: str
    status_label: str
    requested: Stamp
    expires: Stamp
    decided_by: str
    reason: str


@dataclass(frozen=True)
class SignalView:
    signal: str
    tier: str
    why: str
    where: str


@dataclass(frozen=True)
class BudgetLine:
    label: str
    used: str
    limit: str
    percent: int


@dataclass(frozen=True)
class RunSummary:
    id: str
    short_id: str
    request: str
    status: str
    status_label: str
    created: Stamp


@dataclass(frozen=True)
class RunView:
    id: str
    short_id: str
    request: str
    template: str
    status: str
    status_label: str
    active: bool
    message: str
    error_code: str
    declared_tier: str
    effective_tier: str
    signals: list[SignalView]
    gate_required: bool
    revisions: int
    created_by: str
    created: Stamp
    finished: Stamp | None
    pipeline: list[PipelineGroup]
    stages: list[StageView]
    current: StageView | None
    open_question: QuestionView | None
    answered: list[QuestionView]
    pending_approval: ApprovalView | None
    decided_approvals: list[ApprovalView]
    budget: list[BudgetLine]
    pending_changes: int
    commit: DeliveredView | None = None


@dataclass(frozen=True)
class RunError:
    """A refusal shown in the panel, with its code; ``digest`` is the one now waiting for
    approval when the refusal was about a digest (ACODE-RUN-010/011)."""

    code: str
    message: str
    digest: str = ""


@dataclass
class RunPanel:
    session_id: str
    run: RunView | None
    earlier: list[RunSummary] = field(default_factory=list)
    can_start: bool = False
    can_answer: bool = False
    can_decide: bool = False
    can_cancel: bool = False
    error: RunError | None = None
    risks: list[tuple[str, str]] = field(default_factory=lambda: RISK_CHOICES)
    prefill: str = ""  # what the Run form starts with


def _badge(role_id: int | None) -> RoleBadge | None:
    if role_id is None:
        return None
    try:
        return role_badge(registry.by_id(role_id).slug)
    except Exception:  # a role deleted since: a grey badge rather than no page
        return role_badge("")


def _verdict(data: Mapping[str, Any]) -> VerdictView | None:
    if not data or not data.get("verdict"):
        return None
    verdict = str(data.get("verdict", ""))
    findings = [
        Finding(
            str(f.get("path", "")),
            f.get("line") if isinstance(f.get("line"), int) else None,
            str(f.get("body", "")),
        )
        for f in data.get("findings", [])
        if isinstance(f, Mapping)
    ]
    return VerdictView(
        verdict, VERDICT_LABELS.get(verdict, verdict), str(data.get("summary", "")), findings
    )


def _evidence(data: Mapping[str, Any]) -> EvidenceView | None:
    if not data:
        return None
    return EvidenceView(
        ran=bool(data.get("ran")),
        status=str(data.get("status", "")),
        command=str(data.get("command", "")),
        output=str(data.get("output", ""))[-EVIDENCE_CHARS:],
        summary=str(data.get("summary", "")),
        findings=str(data.get("findings", "")),
    )


def _stage_view(stage: RunStage, current: bool, waits: list[Interval] | None = None) -> StageView:
    now = timezone.now()
    end = stage.finished_at or now
    waited = overlap_seconds(stage.started_at, end, waits, now) if waits else 0.0
    return StageView(
        seq=stage.seq,
        purpose=stage.purpose,
        purpose_name=PURPOSE_NAMES.get(stage.purpose, stage.purpose),
        role=_badge(stage.role_id),
        reason=stage.reason,
        plan_step=stage.plan_step,
        revision=stage.revision,
        status=stage.status,
        status_label=STAGE_LABELS.get(stage.status, stage.status),
        current=current,
        job_id=str(stage.job_id or ""),
        job_short=str(stage.job_id or "")[:8],
        verdict=_verdict(stage.verdict) if stage.purpose == StagePurpose.REVIEW else None,
        evidence=_evidence(stage.evidence)
        if stage.purpose in (StagePurpose.TEST, StagePurpose.EXPLORE)
        else None,
        started=stamp_of(stage.started_at),
        took=duration_text((end - stage.started_at).total_seconds() - waited),
        waited=duration_text(waited) if waited >= 1 else "",
    )


def pipeline(
    template_stages: Iterable[WorkflowStage], run: Run, stages: list[RunStage]
) -> list[PipelineGroup]:
    """The template's stages in order, each marked done, current, failed or pending by what
    the run executed; the code/test/review stages are one group (the revision loop)."""
    last = stages[-1] if stages else None
    active = run.status in ACTIVE_RUN_STATUSES
    nodes: list[PipelineNode] = []
    for stage in template_stages:
        ran = [s for s in stages if s.position == stage.position]
        nodes.append(_node(stage.position, stage.purpose, stage.role_id, ran, last, active))
    if run.gate_required and not any(n.purpose == StagePurpose.APPROVAL for n in nodes):
        # A risk signal raised the run's tier after it started: the engine adds a gate.
        ran = [s for s in stages if s.purpose == StagePurpose.APPROVAL]
        nodes.append(_node(len(nodes), StagePurpose.APPROVAL, None, ran, last, active))
    groups: list[PipelineGroup] = []
    for node in nodes:
        loop = node.purpose in LOOP_PURPOSES
        if groups and groups[-1].loop and loop:
            groups[-1].nodes.append(node)
        else:
            groups.append(PipelineGroup(loop, [node]))
    return groups


def _node(
    position: int,
    purpose: str,
    role_id: int | None,
    ran: list[RunStage],
    last: RunStage | None,
    active: bool,
) -> PipelineNode:
    if active and last is not None and ran and ran[-1] is last:
        state = "current"
    elif ran and ran[-1].status == StageStatus.SUCCEEDED:
        state = "done"
    elif ran and ran[-1].status in (StageStatus.FAILED, StageStatus.CANCELLED):
        state = "failed"
    else:
        state = "pending"
    return PipelineNode(
        position,
        purpose,
        PURPOSE_NAMES.get(purpose, purpose),
        _badge(role_id),
        state,
        len(ran),
    )


def _question(q: Any) -> QuestionView:
    return QuestionView(
        id=q.pk,
        asked_by=q.asked_by,
        question=q.question,
        answer=q.answer,
        answered_by=q.answered_by.get_username() if q.answered_by_id else "",
        asked=stamp_of(q.asked_at),
        answered=stamp_of(q.answered_at) if q.answered_at else None,
    )


def _approval(a: Any) -> ApprovalView:
    return ApprovalView(
        id=a.pk,
        digest=a.digest,
        short=a.digest[:12],
        status=a.status,
        status_label=APPROVAL_LABELS.get(a.status, a.status),
        requested=stamp_of(a.requested_at),
        expires=stamp_of(a.expires_at),
        decided_by=a.decided_by.get_username() if a.decided_by_id else "",
        reason=a.reason,
    )


def _percent(used: int, limit: int) -> int:
    return min(100, round(100 * used / limit)) if limit else 0


def _budget(run: Run) -> list[BudgetLine]:
    used = run_usage(run)
    calls, tokens, seconds = (
        used["used_llm_calls"],
        used["used_tokens"],
        used["elapsed_seconds"],
    )
    return [
        BudgetLine(
            "LLM calls", str(calls), str(run.max_llm_calls), _percent(calls, run.max_llm_calls)
        ),
        BudgetLine(
            "Tokens", f"{tokens:,}", f"{run.max_tokens:,}", _percent(tokens, run.max_tokens)
        ),
        BudgetLine(
            "Time",
            duration_text(seconds),
            duration_text(run.max_seconds),
            _percent(seconds, run.max_seconds),
        ),
    ]


def run_view(run: Run, session: AgentSession) -> RunView:
    """Everything the panel shows of one run; ``run`` comes from ``runs_with_details``."""
    stages = list(run.stages.all())
    active = run.status in ACTIVE_RUN_STATUSES
    questions = list(run.questions.all())
    waits: dict[int, list[Interval]] = {}
    for q in questions:  # a stage that asked a person waited for the answer
        if q.stage_id is not None:
            waits.setdefault(q.stage_id, []).append((q.asked_at, q.answered_at or run.finished_at))
    views = [
        _stage_view(s, active and i == len(stages) - 1, waits.get(s.pk))
        for i, s in enumerate(stages)
    ]
    template_stages = list(run.template.stages.order_by("position"))
    open_question = run_open_question(run)
    pending = run_pending_approval(run)
    return RunView(
        id=str(run.pk),
        short_id=str(run.pk)[:8],
        request=run.request,
        template=run.template.name,
        status=run.status,
        status_label=RUN_LABELS.get(run.status, run.status),
        active=active,
        message=run.message,
        error_code=run.error_code,
        declared_tier=run.declared_tier,
        effective_tier=run.effective_tier,
        signals=[
            SignalView(
                str(s.get("signal", "")),
                str(s.get("tier", "")),
                str(s.get("why", "")),
                str(s.get("where", "")),
            )
            for s in run.signals or []
            if isinstance(s, Mapping)
        ],
        gate_required=run.gate_required,
        revisions=run.revisions,
        created_by=run.created_by,
        created=stamp_of(run.created_at),
        finished=stamp_of(run.finished_at) if run.finished_at else None,
        pipeline=pipeline(template_stages, run, stages),
        stages=views,
        current=views[-1] if views and views[-1].current else None,
        open_question=_question(open_question) if open_question else None,
        answered=[_question(q) for q in questions if q.answered_at is not None],
        pending_approval=_approval(pending) if pending else None,
        decided_approvals=[
            _approval(a) for a in run.approvals.all() if a.status != ApprovalStatus.PENDING
        ],
        budget=_budget(run),
        pending_changes=session.pending_changes.count(),
        commit=delivered_view(commit) if (commit := run_commit(run)) else None,
    )


def session_run(session: AgentSession) -> Run | None:
    """The run the panel is about: the session's newest (the active one, if it has one)."""
    runs = runs_with_details(Run.objects.filter(session=session).order_by("-created_at"))
    run = runs.first()
    if run is not None:
        run.session = session  # the permission checks read it: no second query
    return run


def run_panel(session: AgentSession, user: Any, *, error: RunError | None = None) -> RunPanel:
    """The run panel of a session as ``user`` sees it (which buttons they get)."""
    run = session_run(session)
    panel = RunPanel(session_id=str(session.pk), run=None, error=error)
    panel.can_start = (
        user is not None
        and action_refusal(SessionAction.RUN_START, session=session, user=user) is None
    )
    # The form starts with the session's task until a run of it succeeded.
    if run is None or run.status != RunStatus.SUCCEEDED:
        panel.prefill = session.task
    if run is None:
        return panel
    panel.run = run_view(run, session)
    if user is not None:
        panel.can_answer = run_can_answer(user, run)
        panel.can_decide = run_can_approve(user, run)
        panel.can_cancel = run_can_cancel(user, run)
    earlier = (
        Run.objects.filter(session=session)
        .exclude(pk=run.pk)
        .order_by("-created_at")
        .values_list("id", "request", "status", "created_at")[:EARLIER_RUNS_SHOWN]
    )
    panel.earlier = [
        RunSummary(
            str(pk), str(pk)[:8], request, status, RUN_LABELS.get(status, status), stamp_of(at)
        )
        for pk, request, status, at in earlier
    ]
    return panel


def run_panel_variant(user: Any) -> int:
    """Who sees the same run panel: everyone alike, except approvers, whose buttons depend
    on whether they started the run (a socket key; 0 for non-approvers)."""
    return int(user.pk) if user.has_perm(APPROVE_RUN_PERMISSION) else 0


# -- the buttons ---------------------------------------------------------------------------


def _is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _visible_session(user: User, pk: Any) -> AgentSession:
    session = sessions_visible_to(user).filter(pk=pk).first()
    if session is None:
        raise Http404("No such session, or it is not yours to see.")
    return session


def _visible_run(user: User, pk: Any) -> Run:
    run = runs_visible_to(user).filter(pk=pk).first()
    if run is None:
        raise Http404("No such run, or it is not yours to see.")
    return run


def _error(error: AcodeError) -> RunError:
    digest = error.details.get("digest") if error.details else None
    return RunError(error.code, error.message, str(digest) if digest else "")


def _answer(
    request: HttpRequest, session: AgentSession, error: AcodeError | None, done: str
) -> HttpResponse:
    """The re-rendered panel for htmx; otherwise back to the session page with a message."""
    user = cast(User, request.user)
    if _is_htmx(request):
        session.refresh_from_db(fields=["active_run"])  # read before the action changed it
        panel = run_panel(session, user, error=_error(error) if error else None)
        return render(request, RUN_PARTIAL, {"runs": panel})
    if error is not None:
        messages.error(request, _error(error).message, error.code)
    else:
        messages.success(request, done)
    return HttpResponseRedirect(reverse("dashboard-session", kwargs={"pk": session.pk}))


def _text(request: HttpRequest, name: str) -> str:
    value = request.POST.get(name, "")
    if has_forbidden_characters(value) or len(value) > MAX_TEXT_CHARS:
        raise AcodeError(
            "ACODE-API-400",
            f"The {name} has characters that are not allowed or is too long.",
            {"field": name},
        )
    return value


@login_required
@require_POST
def run_start(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Start a run of the request in the session (the Run form). The service decides who
    may, and whether now (``permissions.action_refusal``)."""
    user = cast(User, request.user)
    session = _visible_session(user, pk)
    try:
        risk = request.POST.get("risk", "").strip() or None
        if risk is not None and risk not in RiskTier.values:
            raise AcodeError("ACODE-API-400", f"Unknown risk tier {risk!r}.", {"field": "risk"})
        run_services.run_start(
            session=session, request=_text(request, "request"), user=user, risk=risk
        )
    except AcodeError as error:
        return _answer(request, session, error, "")
    return _answer(request, session, None, "Run started.")


def _run_action(
    request: HttpRequest,
    pk: UUID,
    act: Callable[[Run, User], object],
    done: str,
) -> HttpResponse:
    """Take a person's action on a run they may see; the service decides who may, and
    whether now (``permissions.action_refusal``), and audits refused decisions."""
    user = cast(User, request.user)
    run = _visible_run(user, pk)
    session = run.session
    try:
        act(run, user)
    except AcodeError as error:
        return _answer(request, session, error, "")
    return _answer(request, session, None, done)


@login_required
@require_POST
def run_answer(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Answer the run's open question; the run goes on."""

    def act(run: Run, user: User) -> object:
        return run_services.run_answer(run=run, answer=_text(request, "answer"), user=user)

    return _run_action(request, pk, act, "Answer sent; the run goes on.")


@login_required
@require_POST
def run_approve(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Approve the run at its gate, bound to the digest the page showed. The service
    decides who may (the approve-run permission, not the run's starter)."""

    def act(run: Run, user: User) -> object:
        digest = request.POST.get("digest", "").strip()
        if not digest:
            raise AcodeError(
                "ACODE-API-400", "Approve the digest shown on the page.", {"field": "digest"}
            )
        return run_services.run_approve(
            run=run, user=user, digest=digest, reason=_text(request, "reason")
        )

    return _run_action(request, pk, act, "Run approved.")


@login_required
@require_POST
def run_reject(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Reject the run at its gate, with a reason."""

    def act(run: Run, user: User) -> object:
        return run_services.run_reject(run=run, user=user, reason=_text(request, "reason"))

    return _run_action(request, pk, act, "Run rejected.")


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Cancel the run: at once when it waits, at the end of the running stage otherwise."""

    def act(run: Run, user: User) -> object:
        return run_services.run_cancel(run=run, user=user)

    return _run_action(request, pk, act, "Cancel requested.")


@login_required
@require_GET
def stage_job(request: HttpRequest, pk: UUID, job_id: UUID) -> HttpResponse:
    """One job of the session with its events (a run stage's "job" link): the job card for
    htmx, a page of its own otherwise."""
    user = cast(User, request.user)
    session = _visible_session(user, pk)
    job = job_panel(session.pk, job_id)
    if job is None:
        raise Http404("No such job in this session.")
    context = {"job": job, "open_result": True, "session": session}
    if _is_htmx(request):
        return render(request, f"{SESSION_TEMPLATE}#job-card", context)
    return render(request, JOB_TEMPLATE, {**context, "nav": "board"})
