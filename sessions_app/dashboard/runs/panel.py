"""The run panel of the session page: the session's newest run as a pipeline of its
template's stages, the stages it executed, its questions, approval gate, risk and budget,
and the buttons the viewer may press (as ``permissions.may_take`` says). It reads through
``sessions_app.selectors``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.utils import timezone

from roles.registry import registry
from sessions_app.dashboard.deliveries import delivered_view
from sessions_app.dashboard.formatting import (
    RoleBadge,
    WaitingView,
    duration_text,
    role_badge,
    stamp_of,
    waiting_view,
)
from sessions_app.dashboard.runs.shapes import (
    APPROVAL_LABELS,
    LOOP_PURPOSES,
    PURPOSE_NAMES,
    RUN_LABELS,
    STAGE_LABELS,
    VERDICT_LABELS,
    ApprovalView,
    BudgetLine,
    EvidenceView,
    Finding,
    PipelineGroup,
    PipelineNode,
    PlanView,
    QuestionView,
    RunError,
    RunPanel,
    RunSummary,
    RunView,
    SignalView,
    StageView,
    VerdictView,
)
from sessions_app.models import (
    ACTIVE_RUN_STATUSES,
    AgentSession,
    ApprovalStatus,
    Run,
    RunStage,
    RunStatus,
    StagePurpose,
    StageStatus,
    WorkflowStage,
)
from sessions_app.permissions import APPROVE_RUN_PERMISSION, SessionAction, may_take
from sessions_app.selectors.jobs import job_id_in_flight
from sessions_app.selectors.runs import (
    run_commit,
    run_open_question,
    run_pending_approval,
    run_template_stages,
    run_usage,
    session_earlier_runs,
    session_newest_run,
)
from sessions_app.selectors.sessions import pending_change_count
from sessions_app.selectors.time_in_role import Interval, overlap_seconds

EARLIER_RUNS_SHOWN = 5
# Test output shown per test stage (the engine keeps up to 4,000 characters).
EVIDENCE_CHARS = 4_000


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


def _plan(data: Mapping[str, Any]) -> PlanView | None:
    if not data:
        return None
    criteria = [
        (int(c.get("step", 0)), str(c.get("title", "")), [str(a) for a in c.get("acceptance", [])])
        for c in data.get("criteria", [])
        if isinstance(c, Mapping)
    ]
    return PlanView(
        steps=int(data.get("steps", 0)),
        complexity=str(data.get("complexity", "")),
        risks=[str(r) for r in data.get("risks", [])],
        criteria=criteria,
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
        since=stamp_of(stage.started_at) if current and not waits else None,
        plan=_plan(stage.evidence) if stage.purpose == StagePurpose.PLAN else None,
        reasoning_effort=stage.reasoning_effort,
        reused=bool(stage.evidence.get("reused_from")),
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
            since=stamp_of(run.created_at) if run.status == RunStatus.RUNNING else None,
        ),
    ]


def _waiting(run: Run, stages: list[RunStage]) -> WaitingView | None:
    """What a running run's current stage waits on (its job's model call, tool, worker)."""
    if run.status != RunStatus.RUNNING or not stages or stages[-1].job_id is None:
        return None
    return waiting_view(job_id_in_flight(stages[-1].job_id))


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
                int(s.get("score", 0)),
                bool(s.get("sensitive")),
            )
            for s in run.signals or []
            if isinstance(s, Mapping)
        ],
        gate_required=run.gate_required,
        risk_score=run.risk_score,
        revisions=run.revisions,
        created_by=run.created_by,
        created=stamp_of(run.created_at),
        finished=stamp_of(run.finished_at) if run.finished_at else None,
        pipeline=pipeline(run_template_stages(run), run, stages),
        stages=views,
        current=views[-1] if views and views[-1].current else None,
        open_question=_question(open_question) if open_question else None,
        answered=[_question(q) for q in questions if q.answered_at is not None],
        pending_approval=_approval(pending) if pending else None,
        decided_approvals=[
            _approval(a) for a in run.approvals.all() if a.status != ApprovalStatus.PENDING
        ],
        budget=_budget(run),
        pending_changes=pending_change_count(session),
        commit=delivered_view(commit) if (commit := run_commit(run)) else None,
        waiting=_waiting(run, stages),
    )


def run_panel(session: AgentSession, user: Any, *, error: RunError | None = None) -> RunPanel:
    """The run panel of a session as ``user`` sees it (which buttons they get)."""
    run = session_newest_run(session)  # the active one, if the session has one
    panel = RunPanel(session_id=str(session.pk), run=None, error=error)
    panel.can_start = user is not None and may_take(user, SessionAction.RUN_START, session)
    # The form starts with the session's task until a run of it succeeded.
    if run is None or run.status != RunStatus.SUCCEEDED:
        panel.prefill = session.task
    if run is None:
        return panel
    panel.run = run_view(run, session)
    if user is not None:
        panel.can_answer = may_take(user, SessionAction.RUN_ANSWER, run)
        panel.can_decide = may_take(user, SessionAction.RUN_APPROVE, run)
        panel.can_cancel = may_take(user, SessionAction.RUN_CANCEL, run)
    earlier = session_earlier_runs(session, but=run.pk, limit=EARLIER_RUNS_SHOWN)
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
