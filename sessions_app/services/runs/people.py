"""What people do to a run: answer its question, approve or reject it at the gate, cancel it;
and what a stage's job reports to it: a review verdict, a question for a person."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from acode.errors import AcodeError
from acode.inputs import is_blank
from sessions_app.models import (
    ApprovalStatus,
    AuditEventType,
    Job,
    JobStatus,
    Run,
    RunQuestion,
    RunStage,
    RunStatus,
    StagePurpose,
    StageStatus,
)
from sessions_app.permissions import SessionAction, action_check, action_refusal
from sessions_app.services.audit import audit_record
from sessions_app.services.jobs import JobLimits, job_cancel, job_create
from sessions_app.services.runs.common import lock_run, publish_run
from sessions_app.services.runs.engine import (
    advance_locked,
    budget_left,
    run_complete,
    run_finish,
    stage_start,
    template_stages,
)
from sessions_app.services.runs.gate import approval_digest, gate_open
from sessions_app.services.sessions import actor_name, current_role_of, lock_session

MAX_ANSWER_CHARS = 20_000
MAX_FINDINGS = 100


def _decision(run: Run, who: str, result: str, **details: Any) -> None:
    audit_record(
        event_type=AuditEventType.RUN_DECISION,
        actor=who,
        session=run.session,
        role=current_role_of(run.session).slug,
        target=f"run {run.pk}",
        result=result,
        details=details,
    )


def _text(value: str, field: str, limit: int) -> str:
    if not value or is_blank(value):
        raise AcodeError("ACODE-API-400", f"A non-blank {field} is required.", {"field": field})
    if len(value) > limit:
        raise AcodeError(
            "ACODE-API-400", f"The {field} has at most {limit} characters.", {"field": field}
        )
    return value.strip()


# -- from a stage's job ------------------------------------------------------------------


def run_review_record(*, job: Job, verdict: str, summary: str, comments: list[Any]) -> None:
    """A review stage's verdict (``submit_review``): the run decides what follows."""
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
        verdict={"verdict": verdict, "summary": summary[:4000], "findings": findings}
    )


def run_question_ask(*, job: Job, question: str) -> RunQuestion:
    """A stage asks a person (``ask_human``): the run pauses when the job ends."""
    assert job.run_stage_id is not None
    stage = RunStage.objects.select_related("run").get(pk=job.run_stage_id)
    return RunQuestion.objects.create(
        run=stage.run, stage=stage, asked_by=job.role.slug, question=question[:4000]
    )


# -- from people -------------------------------------------------------------------------


def run_answer(*, run: Run, answer: str, user: User | None = None, actor: str | None = None) -> Run:
    """Answer the run's open question: a paused stage goes on with the answer; a blocked
    run sends the step back to the Coder with it (the revision bound starts again)."""
    answer = _text(answer, "answer", MAX_ANSWER_CHARS)
    who = actor_name(user, actor)
    with transaction.atomic():
        run = lock_run(run.pk)
        session = lock_session(run.session_id)
        action_check(SessionAction.RUN_ANSWER, session=session, user=user, run=run)
        question = run.questions.filter(answered_at__isnull=True).order_by("-asked_at").first()
        if question is None:  # pragma: no cover - a paused run always has one
            raise AcodeError("ACODE-RUN-004", "The run has no open question.", {})
        question.answer = answer
        question.answered_by = user if user is not None and user.is_authenticated else None
        question.answered_at = timezone.now()
        question.save()
        _decision(run, who, "answered", question=question.question, answer=answer[:1000])
        blocked = run.status == RunStatus.BLOCKED
        run.status = RunStatus.RUNNING
        run.message = ""
        run.save(update_fields=["status", "message", "updated_at"])
        stage = question.stage
        if blocked:
            run.revisions = 0
            run.save(update_fields=["revisions"])
            stages = template_stages(run)
            code = next(s for s in stages if s.purpose == StagePurpose.CODE)
            step = stage.plan_step if stage is not None else 1
            stage_start(run, session, code, step=step or 1, revision=0)
        elif stage is not None:
            _resume_stage(run, stage, question.question, answer)
        else:  # pragma: no cover
            advance_locked(run, session)
        publish_run(run)
    return run


def _resume_stage(run: Run, stage: RunStage, question: str, answer: str) -> None:
    """The waiting stage's role goes on: a new job with the first one's request and the
    answer (the session never left the role)."""
    left = budget_left(run)
    first = Job.objects.get(pk=stage.job_id) if stage.job_id else None
    assert first is not None  # a stage that asked had a job
    job = job_create(
        session=run.session,
        request=f"{first.request}\n\n## You asked a person\nQ: {question}\nA: {answer}",
        actor="orchestrator",
        run_stage=stage,
        limits=JobLimits(
            llm_calls=min(filter(None, [first.limit_llm_calls, left.llm_calls])),
            tokens=min(filter(None, [first.limit_tokens, left.tokens])),
            seconds=left.seconds,
            model=first.model_override,
        ),
    )
    stage.job = job
    stage.status = StageStatus.RUNNING
    stage.finished_at = None
    stage.save(update_fields=["job", "status", "finished_at"])


def run_approve(*, run: Run, user: User, digest: str = "", reason: str = "") -> Run:
    """Approve a run at its gate: commits exactly what was asked to be approved.

    Refused (``permissions.action_refusal``) for someone who may not decide, for whoever
    started the run (separation of duties) and when the run is not at its gate; then for a
    digest that is not the one asked about, when anything changed since approval was
    asked (a new request is opened) and when the request expired (likewise). Every refusal
    is audited.
    """
    with transaction.atomic():
        run = lock_run(run.pk)
        session = lock_session(run.session_id)
        refusal = action_refusal(SessionAction.RUN_APPROVE, session=session, user=user, run=run)
        approval = run.approvals.filter(status=ApprovalStatus.PENDING).order_by("-id").first()
        now = timezone.now()
        if refusal is not None or approval is None:
            pass
        elif now >= approval.expires_at:
            approval.status = ApprovalStatus.EXPIRED
            approval.save(update_fields=["status"])
            fresh = gate_open(run, session)
            refusal = AcodeError(
                "ACODE-RUN-010",
                "The approval request expired; a new one was opened. Review it and approve again.",
                {"expired_at": approval.expires_at.isoformat(), "digest": fresh.digest},
            )
        elif digest and digest != approval.digest:
            refusal = AcodeError(
                "ACODE-RUN-011",
                "The digest you approved is not the one waiting for approval.",
                {"approved": digest, "digest": approval.digest},
            )
        elif approval_digest(run, session) != approval.digest:
            fresh = gate_open(run, session)
            refusal = AcodeError(
                "ACODE-RUN-011",
                "The changes, the run or its roles changed after approval was asked; that "
                "approval no longer counts. A new request was opened for what is there now.",
                {"approved": approval.digest, "digest": fresh.digest},
            )
        if refusal is not None:
            _decision(
                run, user.get_username(), refusal.code, digest=digest, message=refusal.message
            )
        else:
            assert approval is not None  # a run at the gate always has one
            approval.status = ApprovalStatus.APPROVED
            approval.decided_by = user
            approval.decided_at = now
            approval.reason = reason.strip()[:4000]
            approval.save()
            _decision(run, user.get_username(), "approved", digest=approval.digest, reason=reason)
            run.stages.filter(status=StageStatus.AWAITING_APPROVAL).update(
                status=StageStatus.SUCCEEDED, finished_at=now
            )
            run_complete(
                run,
                session,
                summary=f"{run.request[:60]} (approved by {user.get_username()})",
                user=user,
            )
    if refusal is not None:
        raise refusal  # after commit: the refusal and the new request are kept
    return run


def run_reject(*, run: Run, user: User, reason: str) -> Run:
    """Reject a run at its gate: it ends ``rejected``; the changes stay pending, uncommitted.
    Refused (and audited) as ``permissions.action_refusal`` says."""
    reason = _text(reason, "reason", 4000)
    with transaction.atomic():
        run = lock_run(run.pk)
        session = lock_session(run.session_id)
        refusal = action_refusal(SessionAction.RUN_REJECT, session=session, user=user, run=run)
        if refusal is not None:
            _decision(run, user.get_username(), refusal.code, message=refusal.message)
        else:
            run.approvals.filter(status=ApprovalStatus.PENDING).update(
                status=ApprovalStatus.REJECTED,
                decided_by=user,
                decided_at=timezone.now(),
                reason=reason,
            )
            _decision(run, user.get_username(), "rejected", reason=reason)
            run_finish(
                run,
                session,
                RunStatus.REJECTED,
                "",
                f"Rejected by {user.get_username()}: {reason}",
            )
    if refusal is not None:
        raise refusal  # after commit: the refusal is kept
    return run


def run_cancel(*, run: Run, user: User | None = None, actor: str | None = None) -> Run:
    """Cancel a run: at once when it waits; at the end of the running stage otherwise.
    Either way the session goes back to Default."""
    who = actor_name(user, actor)
    with transaction.atomic():
        run = lock_run(run.pk)
        session = lock_session(run.session_id)
        action_check(SessionAction.RUN_CANCEL, session=session, user=user, run=run)
        run.cancel_requested = True
        run.save(update_fields=["cancel_requested", "updated_at"])
        _decision(run, who, "cancel requested")
        current = run.stages.order_by("-seq").first()
        job = (
            Job.objects.get(pk=current.job_id)
            if current is not None and current.status == StageStatus.RUNNING and current.job_id
            else None
        )
        if current is not None and job is not None and job.status == JobStatus.QUEUED:
            job_cancel(job=job, actor=who, run_id=run.pk)  # not started: nothing to wait for
            job = None
            current.status = StageStatus.CANCELLED
            current.finished_at = timezone.now()
            current.save(update_fields=["status", "finished_at"])
        if job is not None and not job.is_final and run.status == RunStatus.RUNNING:
            run.message = f"Cancel requested by {who}; stops when the current stage ends."
            run.save(update_fields=["message"])
            publish_run(run)
        else:
            run_finish(run, session, RunStatus.CANCELLED, "", f"Run cancelled by {who}")
    return run
