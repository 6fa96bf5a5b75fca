"""Executing a run: start it, move it from stage to stage, finish it.

``run_advance`` is the one place a run moves. It locks the run, closes the stage whose job
ended (its verdict, evidence and progress), decides the next stage from the template and
what happened so far, moves the session into that stage's role through the one
transition service (with a reason a person can read) and queues the stage's job. Every
job of a run calls it when it ends (``run_after_job``, from the Celery task), and a
periodic sweep calls it for runs that stopped between stages, so a worker that dies
loses nothing and a finished stage never runs again.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from acode.error_codes import MODEL_FAILURE_CODES, MODEL_SETTINGS_HINT
from acode.errors import AcodeError
from acode.inputs import is_blank
from roles.registry import registry
from sessions_app.models import (
    FINAL_JOB_STATUSES,
    AgentSession,
    AuditEventType,
    Job,
    JobEventKind,
    JobStatus,
    RiskTier,
    Run,
    RunQuestion,
    RunStage,
    RunStatus,
    StagePurpose,
    StageStatus,
    StepStatus,
    WorkflowStage,
    WorkflowTemplate,
)
from sessions_app.permissions import SessionAction, action_check
from sessions_app.services.audit import audit_record
from sessions_app.services.changes import changes_commit, pending_digest
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.jobs import JobLimits, job_create, job_expire, require_broker
from sessions_app.services.plans import plan_set, plan_step_update
from sessions_app.services.runs.common import (
    ORCHESTRATOR,
    lock_run,
    publish_run,
    run_audit,
    run_pause,
)
from sessions_app.services.runs.gate import gate_open
from sessions_app.services.runs.requests import (
    MAX_REQUEST_CHARS,
    PlanStep,
    plan_step_of,
    stage_request,
)
from sessions_app.services.runs.risk import RiskInput, higher_tier, risk_assess
from sessions_app.services.sessions import actor_name, lock_session
from sessions_app.services.transitions import session_transition

logger = logging.getLogger(__name__)

EVIDENCE_CHARS = 4_000
LOOP_PURPOSES = (StagePurpose.CODE, StagePurpose.TEST, StagePurpose.REVIEW)


def failed_runs(session: AgentSession) -> int:
    """Earlier runs whose work failed; a run the model failed (a loop, a budget, an answer
    it could not give) says nothing about the work, so it does not count."""
    return (
        session.runs.filter(status__in=[RunStatus.FAILED, RunStatus.BLOCKED])
        .exclude(error_code__in=MODEL_FAILURE_CODES)
        .count()
    )


def stage_failure_message(stage: RunStage, job: Job | None) -> str:
    """Why a stage failed, in words a person reads (no raw status), with the fix when the
    model caused it."""
    role = registry.by_id(stage.role_id).name if stage.role_id else "approval"
    if job is None:
        return f"The {role} stage failed: its job is gone."
    how = {
        JobStatus.LIMIT_EXCEEDED: "stopped at a limit",
        JobStatus.CANCELLED: "was cancelled",
    }.get(JobStatus(job.status), "failed")
    message = f"The {role} stage {how}: {job.error_message or 'no reason given'}"
    if job.error_code in MODEL_FAILURE_CODES:
        message += f" {MODEL_SETTINGS_HINT}"
    return message


def template_for(tier: str, slug: str | None = None) -> WorkflowTemplate:
    """The template a run uses: the one named, else the first enabled one for the tier."""
    found = (
        WorkflowTemplate.objects.filter(slug=slug).first()
        if slug
        else WorkflowTemplate.objects.filter(risk_tier=tier, enabled=True).order_by("name").first()
    )
    if found is None or not found.enabled:
        known = list(WorkflowTemplate.objects.filter(enabled=True).values_list("slug", flat=True))
        what = f"named {slug!r}" if slug else f"for {tier} risk"
        raise AcodeError(
            "ACODE-RUN-001",
            f"There is no enabled workflow template {what}.",
            {"template": slug, "tier": tier, "known": known},
        )
    if not found.stages.exists():
        raise AcodeError(
            "ACODE-API-409", f"Workflow template {found.slug!r} has no stages.", {"template": slug}
        )
    return found


def _gate_for(tier: str, template: WorkflowTemplate) -> bool:
    """Is an approval gate required: the run's template has one, or the template for its
    effective tier does."""
    if template.stages.filter(purpose=StagePurpose.APPROVAL).exists():
        return True
    tiered = WorkflowTemplate.objects.filter(risk_tier=tier, enabled=True).order_by("name").first()
    return tier == RiskTier.HIGH or bool(
        tiered and tiered.stages.filter(purpose=StagePurpose.APPROVAL).exists()
    )


def _raise_risk(run: Run, fired: list[dict[str, str]]) -> None:
    known = {(s["signal"], s["where"]) for s in run.signals}
    new = [s for s in fired if (s["signal"], s["where"]) not in known]
    if not new:
        return
    run.signals = [*run.signals, *new]
    run.effective_tier = higher_tier(run.effective_tier, *(s["tier"] for s in new))
    run.gate_required = run.gate_required or _gate_for(run.effective_tier, run.template)


@transaction.atomic
def run_start(
    *,
    session: AgentSession,
    request: str,
    user: User | None = None,
    actor: str | None = None,
    risk: str | None = None,
    template: str | None = None,
) -> Run:
    """Start a run of the request in the session (from Default) and queue its first stage.

    The effective risk tier is the higher of ``risk`` (declared; default low) and the
    signals that fire on the request and the session; it picks the template unless one
    is named.
    """
    if not request or is_blank(request):
        raise AcodeError("ACODE-API-400", "A run needs a non-blank request.", {"field": "request"})
    if len(request) > MAX_REQUEST_CHARS:
        raise AcodeError(
            "ACODE-API-400",
            f"A run's request has at most {MAX_REQUEST_CHARS} characters.",
            {"field": "request"},
        )
    declared = risk or RiskTier.LOW
    if declared not in RiskTier.values:
        raise AcodeError(
            "ACODE-API-400",
            f"Unknown risk tier {declared!r}.",
            {"field": "risk", "allowed": list(RiskTier.values)},
        )
    require_broker()  # refused with 503 before anything is written: submit it again at once
    locked = lock_session(session.pk)
    action_check(SessionAction.RUN_START, session=locked, user=user)
    fired = risk_assess(
        RiskInput(request=request, failed_runs=failed_runs(locked)), where="request"
    )
    tier = higher_tier(declared, *(s["tier"] for s in fired))
    chosen = template_for(tier, template)
    who = actor_name(user, actor)
    run = Run.objects.create(
        session=locked,
        template=chosen,
        request=request.strip(),
        declared_tier=declared,
        effective_tier=tier,
        signals=fired,
        gate_required=_gate_for(tier, chosen),
        max_llm_calls=chosen.max_llm_calls,
        max_tokens=chosen.max_tokens,
        max_seconds=chosen.max_seconds,
        started_by=user if user is not None and user.is_authenticated else None,
        created_by=who,
    )
    default = registry.default()
    if locked.current_role_id != default.id:
        session_transition(session=locked, to_role=default.slug, reason="Starting a run", actor=who)
    locked.refresh_from_db()
    locked.active_run = run
    locked.save(update_fields=["active_run", "updated_at"])
    audit_record(
        event_type=AuditEventType.RUN_EVENT,
        actor=who,
        session=locked,
        role=default.slug,
        target=f"run {run.pk}",
        result="started",
        details={
            "template": chosen.slug,
            "declared_tier": declared,
            "effective_tier": tier,
            "signals": fired,
            "request": run.request[:500],
        },
    )
    publish_run(run, EventKind.RUN_STARTED)
    advance_locked(run, locked)
    return run


def run_after_job(job_id: Any) -> None:
    """A job ended (or its task was redelivered): move its run on, if it belongs to one."""
    run_id = (
        Job.objects.filter(pk=job_id, run_stage__isnull=False)
        .values_list("run_stage__run_id", flat=True)
        .first()
    )
    if run_id is not None:
        run_advance(run_id)


def runs_resume_stalled() -> list[str]:
    """Advance running runs whose current stage's job has ended (a lost ``run_after_job``),
    or never started before the run's budget was spent (``_expire_unstarted``)."""
    _expire_unstarted()
    resumed = []
    for stage in RunStage.objects.filter(
        status=StageStatus.RUNNING,
        run__status=RunStatus.RUNNING,
        job__status__in=FINAL_JOB_STATUSES,
    ).select_related("job"):
        run_advance(stage.run_id)
        resumed.append(str(stage.run_id))
    return resumed


def _expire_unstarted() -> None:
    # A stage's job may wait to start (for the broker to come back, or for a worker on its
    # queue); the re-send delivers it then. The run's budget bounds the wait: once spent
    # (ACODE-RUN-006, in practice its wall time), the job is failed and the run with it.
    for stage in RunStage.objects.filter(
        status=StageStatus.RUNNING, run__status=RunStatus.RUNNING, job__status=JobStatus.QUEUED
    ).select_related("run", "job"):
        assert stage.job is not None
        try:
            budget_left(stage.run)
        except AcodeError as exc:
            job_expire(stage.job, code=exc.code, message=f"{exc.message} Its job never started.")


def run_advance(run_id: Any) -> Run:
    """Move a run on if its current stage is done: the only place a run changes stage."""
    with transaction.atomic():
        run = lock_run(run_id)
        if run.status != RunStatus.RUNNING:
            return run
        session = lock_session(run.session_id)
        advance_locked(run, session)
    return run


def advance_locked(run: Run, session: AgentSession) -> None:
    last = run.stages.order_by("-seq").first()
    if last is not None and last.status == StageStatus.RUNNING:
        job = Job.objects.get(pk=last.job_id) if last.job_id else None
        if job is not None and not job.is_final:
            return  # still working; its end calls us again
        _close_stage(run, session, last, job)
        if run.status != RunStatus.RUNNING:
            return
    if run.cancel_requested:
        run_finish(run, session, RunStatus.CANCELLED, "", "Run cancelled")
        return
    try:
        _next(run, session, last)
    except AcodeError as exc:  # a refused transition, a spent budget: the run stops, saying why
        run_finish(run, session, RunStatus.FAILED, exc.code, exc.message)


def _test_evidence(job: Job) -> dict[str, Any]:
    for event in job.events.filter(kind=JobEventKind.TOOL_RESULT).order_by("-seq"):
        if event.data.get("name") in ("run_tests", "execute_command"):
            return {
                "ran": True,
                "status": event.data.get("status", ""),
                "command": event.data.get("target", ""),
                "output": str(event.data.get("output", ""))[-EVIDENCE_CHARS:],
                "summary": job.result[:EVIDENCE_CHARS],
            }
    return {"ran": False, "summary": job.result[:EVIDENCE_CHARS]}


def _close_stage(run: Run, session: AgentSession, stage: RunStage, job: Job | None) -> None:
    """Record how the stage's job ended; stop or pause the run where that decides it."""
    stage.finished_at = timezone.now()
    if job is None or job.status != JobStatus.SUCCEEDED:
        stage.status = (
            StageStatus.CANCELLED
            if job is not None and job.status == JobStatus.CANCELLED
            else StageStatus.FAILED
        )
        stage.save()
        if run.cancel_requested:
            run_finish(run, session, RunStatus.CANCELLED, "", "Run cancelled")
            return
        code = (job.error_code if job else "") or "ACODE-RUN-005"
        run_finish(run, session, RunStatus.FAILED, code, stage_failure_message(stage, job))
        return
    question = stage.questions.filter(answered_at__isnull=True).first()
    if question is not None:
        stage.status = StageStatus.AWAITING_INPUT
        stage.save()
        run_pause(
            run, session, RunStatus.AWAITING_INPUT, f"Waiting for an answer: {question.question}"
        )
        return
    stage.status = StageStatus.SUCCEEDED  # the session was locked (read) for this advance
    if stage.purpose == StagePurpose.PLAN:
        stage.evidence = {"steps": len(session.plan)}
        _raise_risk(run, risk_assess(RiskInput(plan=tuple(session.plan)), where="plan"))
    elif stage.purpose == StagePurpose.EXPLORE:
        stage.evidence = {"findings": job.result[:EVIDENCE_CHARS]}
    elif stage.purpose == StagePurpose.CODE:
        before, stage.progress = stage.progress, pending_digest(session)
        if stage.progress == before and not stage.revision:  # revisions: ACODE-RUN-007
            stage.status = StageStatus.FAILED
            stage.evidence = {"changed": [], "summary": job.result[:EVIDENCE_CHARS]}
            stage.save()
            run_finish(
                run,
                session,
                RunStatus.FAILED,
                "ACODE-JOB-009",
                f"The Coder stage of plan step {stage.plan_step} changed nothing: the model "
                f"ended without writing a file. {MODEL_SETTINGS_HINT}",
            )
            return
        paths = tuple(session.pending_changes.values_list("path", flat=True))
        stage.evidence = {"changed": list(paths), "summary": job.result[:EVIDENCE_CHARS]}
        _raise_risk(
            run, risk_assess(RiskInput(paths=paths), where=f"changes of step {stage.plan_step}")
        )
    elif stage.purpose == StagePurpose.TEST:
        stage.evidence = _test_evidence(job)
    stage.save()
    run.save()


def template_stages(run: Run) -> list[WorkflowStage]:
    return list(run.template.stages.select_related("role").order_by("position"))


def _next(run: Run, session: AgentSession, last: RunStage | None) -> None:
    stages = template_stages(run)
    if last is None:
        _enter(run, session, stages, 0, step=1, revision=0)
        return
    index = next(i for i, s in enumerate(stages) if s.position == last.position)
    purpose = last.purpose
    if purpose in (StagePurpose.PLAN, StagePurpose.EXPLORE):
        _enter(run, session, stages, index + 1, step=1, revision=0)
    elif purpose == StagePurpose.CODE:
        _after_code(run, session, last)
        if run.status == RunStatus.RUNNING:
            _enter(run, session, stages, index + 1, step=last.plan_step, revision=last.revision)
    elif purpose == StagePurpose.TEST:
        _enter(run, session, stages, index + 1, step=last.plan_step, revision=last.revision)
    elif purpose == StagePurpose.REVIEW:
        _after_review(run, session, stages, last)


def _after_code(run: Run, session: AgentSession, stage: RunStage) -> None:
    """Fail fast when a revision changed nothing."""
    previous = (
        run.stages.filter(purpose=StagePurpose.CODE, plan_step=stage.plan_step, seq__lt=stage.seq)
        .order_by("-seq")
        .first()
    )
    if previous is not None and previous.progress == stage.progress:
        run_finish(
            run,
            session,
            RunStatus.FAILED,
            "ACODE-RUN-007",
            f"No progress: the Coder's revision of plan step {stage.plan_step} left the "
            "changes exactly as they were.",
        )


def _after_review(
    run: Run, session: AgentSession, stages: list[WorkflowStage], review: RunStage
) -> None:
    verdict = review.verdict.get("verdict")
    code_index = next(i for i, s in enumerate(stages) if s.purpose == StagePurpose.CODE)
    if verdict == "request_changes":
        limit = run.template.max_revisions_per_step
        if review.revision >= limit or run.revisions >= run.template.max_revisions_per_run:
            bound = (
                f"{limit} revisions of plan step {review.plan_step}"
                if review.revision >= limit
                else f"{run.template.max_revisions_per_run} revisions in the run"
            )
            _block(
                run,
                session,
                f"The Reviewer still requests changes after {bound}. Answer to give the Coder "
                "guidance and try again, or cancel the run.",
            )
            return
        run.revisions += 1
        run.save(update_fields=["revisions", "updated_at"])
        _enter(
            run, session, stages, code_index, step=review.plan_step, revision=review.revision + 1
        )
        return
    if verdict != "approve":
        _block(run, session, "The Reviewer ended without a verdict (approve or request changes).")
        return
    _step_done(run, session, stages, review.plan_step)


def _step_done(run: Run, session: AgentSession, stages: list[WorkflowStage], number: int) -> None:
    if number and any(s["number"] == number for s in session.plan or []):
        plan_step_update(
            session=session, number=number, status="done", actor=ORCHESTRATOR, run_id=run.pk
        )
        session.refresh_from_db()
    if number < len(session.plan or []):
        code_index = next(i for i, s in enumerate(stages) if s.purpose == StagePurpose.CODE)
        _enter(run, session, stages, code_index, step=number + 1, revision=0)
        return
    loop_end = max(i for i, s in enumerate(stages) if s.purpose in LOOP_PURPOSES)
    _enter(run, session, stages, loop_end + 1, step=0, revision=0)


def _enter(
    run: Run,
    session: AgentSession,
    stages: list[WorkflowStage],
    index: int,
    *,
    step: int,
    revision: int,
) -> None:
    """Start the stage at ``index`` (past the end: finish; the gate: wait for approval)."""
    if index >= len(stages) or stages[index].purpose == StagePurpose.APPROVAL:
        if run.gate_required:
            _open_gate(run, session, stages[index] if index < len(stages) else None)
        else:
            run_complete(run, session, summary=f"Run {run.pk}: {run.request[:60]}")
        return
    stage = stages[index]
    if stage.purpose == StagePurpose.CODE and not session.plan:
        # No planning stage: the request is its own one-step plan (said so in the history).
        plan_set(
            session=session,
            steps=[{"title": run.request[:300]}],
            actor=ORCHESTRATOR,
            run_id=run.pk,
        )
        session.refresh_from_db()
    stage_start(run, session, stage, step=step, revision=revision)


def _reason(purpose: str, step: PlanStep, revision: int, run: Run) -> str:
    where = f"plan step {step.number}/{step.total}: {step.title}"
    if purpose == StagePurpose.PLAN:
        return f"Planning the request ({run.effective_tier} risk)"
    if purpose == StagePurpose.EXPLORE:
        return "Exploring the codebase before coding"
    if purpose == StagePurpose.CODE:
        return f"Revising {where} (revision {revision})" if revision else f"Executing {where}"
    if purpose == StagePurpose.TEST:
        return f"Testing plan step {step.number}/{step.total}"
    return f"Verifying plan step {step.number}/{step.total} completion"


def budget_left(run: Run) -> JobLimits:
    used = Job.objects.filter(run_stage__run=run).aggregate(
        calls=Sum("llm_calls"), tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out")
    )
    calls = run.max_llm_calls - (used["calls"] or 0)
    tokens = run.max_tokens - (used["tokens_in"] or 0) - (used["tokens_out"] or 0)
    seconds = run.max_seconds - int((timezone.now() - run.created_at).total_seconds())
    if calls <= 0 or tokens <= 0 or seconds <= 0:
        spent = "LLM calls" if calls <= 0 else ("tokens" if tokens <= 0 else "wall time")
        raise AcodeError(
            "ACODE-RUN-006",
            f"The run's budget of {spent} is spent.",
            {"llm_calls_left": calls, "tokens_left": tokens, "seconds_left": seconds},
        )
    return JobLimits(llm_calls=calls, tokens=tokens, seconds=seconds)


def _cap(own: int, left: int | None) -> int | None:
    return min(own, left) if own and left is not None else left


def stage_start(
    run: Run,
    session: AgentSession,
    template_stage: WorkflowStage,
    *,
    step: int,
    revision: int,
    extra: str = "",
) -> RunStage:
    left = budget_left(run)
    assert template_stage.role_id is not None  # only the gate has no role
    role = registry.by_id(template_stage.role_id)
    plan_step = plan_step_of(session, step) if step else PlanStep(0, 0, "")
    reason = _reason(template_stage.purpose, plan_step, revision, run)
    moved = session_transition(
        session=session, to_role=role.slug, reason=reason, actor=ORCHESTRATOR, run_id=run.pk
    ).session
    for field in AgentSession._meta.concrete_fields:  # the transition's locked copy is current
        setattr(session, field.attname, getattr(moved, field.attname))
    stage = RunStage.objects.create(
        run=run,
        seq=run.stages.count() + 1,
        position=template_stage.position,
        purpose=template_stage.purpose,
        role_id=role.id,
        plan_step=plan_step.number,
        revision=revision,
        reason=reason,
        # A code stage's progress is the changes' digest: what it was before, until it ends.
        progress=pending_digest(session) if template_stage.purpose == StagePurpose.CODE else "",
    )
    if template_stage.purpose == StagePurpose.CODE and plan_step.number:
        plan_step_update(
            session=session,
            number=plan_step.number,
            status="in_progress",
            actor=ORCHESTRATOR,
            run_id=run.pk,
        )
    request = stage_request(run, session, stage, plan_step) + extra
    job = job_create(
        session=session,
        request=request,
        actor=ORCHESTRATOR,
        run_stage=stage,
        limits=JobLimits(
            llm_calls=_cap(template_stage.max_llm_calls, left.llm_calls),
            tokens=_cap(template_stage.max_tokens, left.tokens),
            seconds=_cap(template_stage.timeout_seconds, left.seconds),
            model=template_stage.model,
        ),
    )
    stage.job = job
    stage.save(update_fields=["job"])
    run_audit(run, session, f"stage {stage.seq} {stage.purpose}", reason=reason, job=str(job.pk))
    publish_run(run)
    return stage


def _block(run: Run, session: AgentSession, message: str) -> None:
    """Stop and ask a person (an answer resumes the step; a cancel ends the run)."""
    last = run.stages.order_by("-seq").first()
    RunQuestion.objects.create(run=run, stage=last, asked_by=ORCHESTRATOR, question=message)
    run_pause(run, session, RunStatus.BLOCKED, message)


def _open_gate(run: Run, session: AgentSession, gate: WorkflowStage | None) -> None:
    RunStage.objects.create(
        run=run,
        seq=run.stages.count() + 1,
        position=gate.position if gate else run.template.stages.count(),
        purpose=StagePurpose.APPROVAL,
        status=StageStatus.AWAITING_APPROVAL,
        reason="Waiting for a person to approve",
    )
    gate_open(run, session)


def run_complete(
    run: Run, session: AgentSession, *, summary: str, user: User | None = None
) -> None:
    """Commit the approved changes on the session branch and end the run."""
    if session.pending_changes.exists():
        changes_commit(
            session=session, summary=summary, actor=ORCHESTRATOR, user=user, run_id=run.pk
        )
    run_finish(run, session, RunStatus.SUCCEEDED, "", "All steps complete")


def run_finish(run: Run, session: AgentSession, status: str, code: str, message: str) -> None:
    """End the run and hand the session back to Default."""
    run.status = status
    run.error_code = code
    run.message = message
    run.finished_at = timezone.now()
    run.save()
    run.stages.filter(
        status__in=[StageStatus.AWAITING_INPUT, StageStatus.AWAITING_APPROVAL]
    ).update(status=StageStatus.CANCELLED, finished_at=run.finished_at)
    if status != RunStatus.SUCCEEDED:  # the step being worked on did not get done
        step_status = StepStatus.PENDING if status == RunStatus.CANCELLED else StepStatus.FAILED
        stuck = [s["number"] for s in session.plan or [] if s.get("status") == "in_progress"]
        for number in stuck:
            plan_step_update(
                session=session, number=number, status=step_status, actor=ORCHESTRATOR,
                run_id=run.pk,
            )  # fmt: skip
        if stuck:
            session.refresh_from_db()
    default = registry.default()
    if session.current_role_id != default.id:
        reason = message if status == RunStatus.SUCCEEDED else f"Run {status}: {message}"
        session_transition(
            session=session,
            to_role=default.slug,
            reason=reason[:500],
            actor=ORCHESTRATOR,
            run_id=run.pk,
        )
    AgentSession.objects.filter(pk=session.pk, active_run=run).update(active_run=None)
    session.active_run = None
    run_audit(run, session, status, code=code, message=message)
    publish_run(run, EventKind.RUN_FINISHED)
