"""What people do to a run: answer its question, approve or reject it at the gate, cancel it.

Each action locks the run and its session, asks ``permissions.action_refusal`` whether this
person may do it now, records what they did (audited), and hands the engine a ``RunEvent``:
the engine decides what follows. Nothing here starts a stage or ends a run.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from acode.errors import AcodeError
from acode.inputs import is_blank
from sessions_app.models import (
    AgentSession,
    ApprovalStatus,
    AuditEventType,
    Run,
    RunApproval,
)
from sessions_app.models.states import status_move, status_move_where
from sessions_app.permissions import SessionAction, action_check, action_refusal
from sessions_app.services.audit import actor_name, audit_record, current_role_of
from sessions_app.services.changes import pending_digest
from sessions_app.services.locks import lock_session
from sessions_app.services.runs.engine import (
    Person,
    RunEvent,
    advance,
    approval_digest,
    gate_open,
    lock_run,
)

MAX_ANSWER_CHARS = 20_000


def _decision(run: Run, session: AgentSession, who: str, result: str, **details: Any) -> None:
    audit_record(
        event_type=AuditEventType.RUN_DECISION,
        actor=who,
        session=session,
        role=current_role_of(session).slug,
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


def run_answer(*, run: Run, answer: str, user: User | None = None, actor: str | None = None) -> Run:
    """Answer the run's open question: a paused stage goes on with the answer; a blocked
    run sends the step back to the Coder with it (the revision bound starts again)."""
    answer = _text(answer, "answer", MAX_ANSWER_CHARS)
    who = actor_name(user, actor)
    with transaction.atomic():
        run = lock_run(run.pk)
        with lock_session(run.session_id) as session:
            action_check(SessionAction.RUN_ANSWER, session=session, user=user, run=run)
            question = run.questions.filter(answered_at__isnull=True).order_by("-asked_at").first()
            if question is None:  # pragma: no cover - a paused run always has one
                raise AcodeError("ACODE-RUN-004", "The run has no open question.", {})
            question.answer = answer
            question.answered_by = user if user is not None and user.is_authenticated else None
            question.answered_at = timezone.now()
            question.save()
            _decision(
                run, session, who, "answered", question=question.question, answer=answer[:1000]
            )
            advance(run, session, RunEvent(Person.ANSWERED, who, user, answer, question))
    return run


def _approval_refusal(
    run: Run, session: AgentSession, approval: RunApproval | None, digest: str
) -> AcodeError | None:
    """Why the pending approval cannot be granted now (expired, another digest, changed
    since it was asked); a fresh request is opened where the old one no longer counts."""
    if approval is None:
        return None
    if timezone.now() >= approval.expires_at:
        status_move(approval, ApprovalStatus.EXPIRED)
        fresh = gate_open(run, session)
        return AcodeError(
            "ACODE-RUN-010",
            "The approval request expired; a new one was opened. Review it and approve again.",
            {"expired_at": approval.expires_at.isoformat(), "digest": fresh.digest},
        )
    if digest != approval.digest:
        return AcodeError(
            "ACODE-RUN-011",
            "The digest you approved is not the one waiting for approval.",
            {"approved": digest, "digest": approval.digest},
        )
    if approval_digest(run, session) != approval.digest:
        fresh = gate_open(run, session)
        return AcodeError(
            "ACODE-RUN-011",
            "The changes, the run or its roles changed after approval was asked; that "
            "approval no longer counts. A new request was opened for what is there now.",
            {"approved": approval.digest, "digest": fresh.digest},
        )
    return None


def run_approve(*, run: Run, user: User, digest: str, reason: str = "") -> Run:
    """Approve a run at its gate: commits exactly what was asked to be approved.

    Refused (``permissions.action_refusal``) for someone who may not decide, for whoever
    started the run (separation of duties) and when the run is not at its gate; then for a
    digest that is not the one asked about, when anything changed since approval was
    asked (a new request is opened) and when the request expired (likewise). Every refusal
    is audited.
    """
    who = user.get_username()
    with transaction.atomic():
        run = lock_run(run.pk)
        with lock_session(run.session_id) as session:
            refusal = action_refusal(SessionAction.RUN_APPROVE, session=session, user=user, run=run)
            approval = run.approvals.filter(status=ApprovalStatus.PENDING).order_by("-id").first()
            if refusal is None:
                refusal = _approval_refusal(run, session, approval, digest)
            if refusal is not None:
                _decision(run, session, who, refusal.code, digest=digest, message=refusal.message)
            else:
                assert approval is not None  # a run at the gate always has one
                status_move(
                    approval, ApprovalStatus.APPROVED, decided_by=user,
                    decided_at=timezone.now(), reason=reason.strip()[:4000],
                )  # fmt: skip
                _decision(run, session, who, "approved", digest=approval.digest, reason=reason)
                # The approval digest covers the pending changes' (checked just now).
                changes = pending_digest(session)
                advance(run, session, RunEvent(Person.APPROVED, who, user, reason, digest=changes))
    if refusal is not None:
        raise refusal  # after commit: the refusal and the new request are kept
    return run


def run_reject(*, run: Run, user: User, reason: str) -> Run:
    """Reject a run at its gate: it ends ``rejected``; the changes stay pending, uncommitted.
    Refused (and audited) as ``permissions.action_refusal`` says."""
    reason = _text(reason, "reason", 4000)
    who = user.get_username()
    with transaction.atomic():
        run = lock_run(run.pk)
        with lock_session(run.session_id) as session:
            refusal = action_refusal(SessionAction.RUN_REJECT, session=session, user=user, run=run)
            if refusal is not None:
                _decision(run, session, who, refusal.code, message=refusal.message)
            else:
                status_move_where(
                    run.approvals.all(), ApprovalStatus.PENDING, ApprovalStatus.REJECTED,
                    decided_by=user, decided_at=timezone.now(), reason=reason,
                )  # fmt: skip
                _decision(run, session, who, "rejected", reason=reason)
                advance(run, session, RunEvent(Person.REJECTED, who, user, reason))
    if refusal is not None:
        raise refusal  # after commit: the refusal is kept
    return run


def run_cancel(*, run: Run, user: User | None = None, actor: str | None = None) -> Run:
    """Cancel a run: at once when it waits; at the end of the running stage otherwise.
    Either way the session goes back to Default."""
    who = actor_name(user, actor)
    with transaction.atomic():
        run = lock_run(run.pk)
        with lock_session(run.session_id) as session:
            action_check(SessionAction.RUN_CANCEL, session=session, user=user, run=run)
            run.cancel_requested = True
            run.save(update_fields=["cancel_requested", "updated_at"])
            _decision(run, session, who, "cancel requested")
            advance(run, session, RunEvent(Person.CANCELLED, who, user))
    return run
