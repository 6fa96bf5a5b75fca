"""A run's stages: entering one (the role, its job), closing one (what it produced) and
what a stage's job reports while it works (a review verdict, a question for a person).

The engine (``engine.py``) decides which stage comes next; these functions carry it out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from acode.error_codes import MODEL_FAILURE_CODES, MODEL_SETTINGS_HINT
from roles.registry import registry
from sessions_app.models import (
    AgentSession,
    Job,
    JobEventKind,
    JobStatus,
    Run,
    RunQuestion,
    RunStage,
    StagePurpose,
    StageStatus,
    WorkflowStage,
)
from sessions_app.models.states import status_move
from sessions_app.services.changes import pending_digest
from sessions_app.services.jobs import job_create
from sessions_app.services.plans import plan_set, plan_step_update
from sessions_app.services.runs.budget import stage_limits
from sessions_app.services.runs.common import ORCHESTRATOR, publish_run, run_audit
from sessions_app.services.runs.gate import gate_required_for
from sessions_app.services.runs.requests import PlanStep, plan_step_of, stage_request
from sessions_app.services.runs.risk import RiskInput, higher_tier, risk_assess
from sessions_app.services.runs.testing import ERROR, NO_TESTS, outcome_of_tests
from sessions_app.services.transitions import session_transition

EVIDENCE_CHARS = 4_000
MAX_FINDINGS = 100


@dataclass(frozen=True)
class StageOutcome:
    """How a closed stage's job ended, for the engine: done, failed (why), or a question."""

    status: str
    code: str = ""
    message: str = ""
    question: RunQuestion | None = None


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
    reason = (job.error_message or "no reason given").rstrip()
    message = f"The {role} stage {how}: {reason}"
    if not message.endswith((".", "!", "?")):
        message += "."  # a sentence ends before the next one (issue 34)
    if job.error_code in MODEL_FAILURE_CODES:
        message += f" {MODEL_SETTINGS_HINT}"
    return message


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


def stage_start(
    run: Run, session: AgentSession, template_stage: WorkflowStage, *, step: int, revision: int
) -> RunStage:
    """Enter a template stage: move the (locked) session into its role with a reason a
    person reads, and queue its job within what is left of the run's budget."""
    limits = stage_limits(
        run,
        llm_calls=template_stage.max_llm_calls,
        tokens=template_stage.max_tokens,
        seconds=template_stage.timeout_seconds,
        model=template_stage.model,
    )
    assert template_stage.role_id is not None  # only the gate has no role
    role = registry.by_id(template_stage.role_id)
    if template_stage.purpose == StagePurpose.CODE and not session.plan:
        # No planning stage: the request is its own one-step plan (said so in the history).
        plan_set(
            session=session, steps=[{"title": run.request[:300]}], actor=ORCHESTRATOR,
            run_id=run.pk,
        )  # fmt: skip
    plan_step = plan_step_of(session, step) if step else PlanStep(0, 0, "")
    reason = _reason(template_stage.purpose, plan_step, revision, run)
    session_transition(
        session=session, to_role=role.slug, reason=reason, actor=ORCHESTRATOR, run_id=run.pk
    )
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
            session=session, number=plan_step.number, status="in_progress",
            actor=ORCHESTRATOR, run_id=run.pk,
        )  # fmt: skip
    request = stage_request(run, session, stage, plan_step)
    _stage_job(run, session, stage, request, limits)
    return stage


def _stage_job(run: Run, session: AgentSession, stage: RunStage, request: str, limits: Any) -> None:
    job = job_create(
        session=session, request=request, actor=ORCHESTRATOR, run_stage=stage, limits=limits
    )
    stage.job = job
    stage.save(update_fields=["job"])
    run_audit(
        run, session, f"stage {stage.seq} {stage.purpose}", reason=stage.reason, job=str(job.pk)
    )
    publish_run(run)


def stage_resume(run: Run, session: AgentSession, stage: RunStage, question: RunQuestion) -> None:
    """A stage that asked a person goes on in the same role: a new job with the first
    one's request and the answer."""
    first = Job.objects.get(pk=stage.job_id) if stage.job_id else None
    assert first is not None  # a stage that asked had a job
    limits = stage_limits(
        run,
        llm_calls=first.limit_llm_calls or 0,
        tokens=first.limit_tokens or 0,
        seconds=0,
        model=first.model_override,
    )
    status_move(stage, StageStatus.RUNNING, finished_at=None)
    request = (
        f"{first.request}\n\n## You asked a person\nQ: {question.question}\nA: {question.answer}"
    )
    _stage_job(run, session, stage, request, limits)


def _test_evidence(job: Job) -> dict[str, Any]:
    """The Tester's last test command: its result follows its exit status (``testing``)."""
    for event in job.events.filter(kind=JobEventKind.TOOL_RESULT).order_by("-seq"):
        if event.data.get("name") in ("run_tests", "execute_command"):
            command = str(event.data.get("target", ""))
            ended = str(event.data.get("summary") or "")
            result, said = (
                outcome_of_tests(command, ended) if ended else (ERROR, "error: no exit status")
            )
            if event.data.get("status") != "ok":
                result, said = ERROR, f"error: the command did not run ({event.data.get('status')})"
            return {
                "ran": True,
                "result": result,
                "status": said,
                "command": command,
                "output": str(event.data.get("output", ""))[-EVIDENCE_CHARS:],
                "summary": job.result[:EVIDENCE_CHARS],
            }
    return {"ran": False, "result": NO_TESTS, "summary": job.result[:EVIDENCE_CHARS]}


def stage_close(run: Run, session: AgentSession, stage: RunStage, job: Job | None) -> StageOutcome:
    """Record how the stage's job ended and what it produced (its evidence, the risk its
    plan or changes raise); the engine decides what follows from the outcome."""
    now = timezone.now()
    if job is None or job.status != JobStatus.SUCCEEDED:
        cancelled = job is not None and job.status == JobStatus.CANCELLED
        status_move(
            stage, StageStatus.CANCELLED if cancelled else StageStatus.FAILED, finished_at=now
        )
        code = (job.error_code if job else "") or "ACODE-RUN-005"
        return StageOutcome(StageStatus.FAILED, code, stage_failure_message(stage, job))
    question = stage.questions.filter(answered_at__isnull=True).first()
    if question is not None:
        status_move(stage, StageStatus.AWAITING_INPUT, finished_at=now)
        return StageOutcome(StageStatus.AWAITING_INPUT, question=question)
    evidence, failure = _evidence(run, session, stage, job)
    if failure is not None:
        status_move(
            stage, StageStatus.FAILED, finished_at=now, evidence=evidence, progress=stage.progress
        )
        return failure
    status_move(
        stage, StageStatus.SUCCEEDED, finished_at=now, evidence=evidence, progress=stage.progress
    )
    return StageOutcome(StageStatus.SUCCEEDED)


def _evidence(
    run: Run, session: AgentSession, stage: RunStage, job: Job
) -> tuple[dict[str, Any], StageOutcome | None]:
    """What a successful job's stage produced; a code stage that changed nothing failed."""
    if stage.purpose == StagePurpose.PLAN:
        run_raise_risk(run, risk_assess(RiskInput(plan=tuple(session.plan)), where="plan"))
        return {"steps": len(session.plan)}, None
    if stage.purpose == StagePurpose.EXPLORE:
        return {"findings": job.result[:EVIDENCE_CHARS]}, None
    if stage.purpose == StagePurpose.TEST:
        return _test_evidence(job), None
    if stage.purpose != StagePurpose.CODE:
        return {}, None
    before, stage.progress = stage.progress, pending_digest(session)
    if stage.progress == before and not stage.revision:  # revisions: ACODE-RUN-007
        return {"changed": [], "summary": job.result[:EVIDENCE_CHARS]}, StageOutcome(
            StageStatus.FAILED,
            "ACODE-JOB-009",
            f"The Coder stage of plan step {stage.plan_step} changed nothing: the model "
            f"ended without writing a file. {MODEL_SETTINGS_HINT}",
        )
    paths = tuple(session.pending_changes.values_list("path", flat=True))
    run_raise_risk(
        run, risk_assess(RiskInput(paths=paths), where=f"changes of step {stage.plan_step}")
    )
    return {"changed": list(paths), "summary": job.result[:EVIDENCE_CHARS]}, None


def run_raise_risk(run: Run, fired: list[dict[str, str]]) -> None:
    """New risk signals raise the run's tier (and may require the approval gate)."""
    known = {(s["signal"], s["where"]) for s in run.signals}
    new = [s for s in fired if (s["signal"], s["where"]) not in known]
    if not new:
        return
    run.signals = [*run.signals, *new]
    run.effective_tier = higher_tier(run.effective_tier, *(s["tier"] for s in new))
    run.gate_required = run.gate_required or gate_required_for(run.effective_tier, run.template)
    run.save(update_fields=["signals", "effective_tier", "gate_required", "updated_at"])


# -- from a stage's job ------------------------------------------------------------------


def run_review_record(
    *, job: Job, verdict: str, summary: str, comments: list[Any], digest: str = ""
) -> None:
    """A review stage's verdict (``submit_review``), with the digest of the pending changes
    the Reviewer was shown: the run decides what follows, and commits an approval only if
    nothing changed since (``engine.run_complete``)."""
    findings = [
        {
            "path": str(c.get("path", ""))[:1000],
            "line": c.get("line") if isinstance(c.get("line"), int) else None,
            "body": str(c.get("body", ""))[:4000],
        }
        for c in comments[:MAX_FINDINGS]
        if isinstance(c, dict)
    ]
    assert job.run_stage_id is not None
    RunStage.objects.filter(pk=job.run_stage_id).update(
        verdict={
            "verdict": verdict, "summary": summary[:4000], "findings": findings,
            **({"digest": digest} if digest else {}),  # an approval: what it saw
        }
    )  # fmt: skip


def run_question_ask(*, job: Job, question: str) -> RunQuestion:
    """A stage asks a person (``ask_human``): the run pauses when the job ends."""
    assert job.run_stage_id is not None
    stage = RunStage.objects.select_related("run").get(pk=job.run_stage_id)
    return RunQuestion.objects.create(
        run=stage.run, stage=stage, asked_by=job.role.slug, question=question[:4000]
    )
