"""A tool call put to a person: asked by the executor, answered by someone allowed to
act on the session, or denied when nobody answers in time.

A command rule may say ``"outcome": "ask"`` (``roles.commands``): the decision
(``roles.decision.decide``) then answers "ask" and the executor (``tool_execute``) calls
``tool_consent_ask`` and waits in ``tool_consent_await``: the job keeps running (its
heartbeat too) and looks for the answer every ``ACODE_CONSENT_POLL_SECONDS``. The call,
its rule and its (redacted) arguments are on the session page and at
``/api/sessions/{id}/consents/``; ``tool_consent_answer`` takes a person's answer, asked
of ``permissions.action_check`` (``SessionAction.CONSENT_ANSWER``: the session's owner, or
someone allowed to act on every session; superusers). After
``ACODE_CONSENT_TIMEOUT_SECONDS`` (default 15 minutes) the call is denied; a job
cancelled while it waits takes its question with it. Every step has its ``ToolConsent``
audit row: ``asked`` (the decision, with what a replay needs), ``answered`` (allowed or
denied, by whom) and ``timed_out`` or ``cancelled``.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from acode.errors import AcodeError
from sessions_app.models import AgentSession, AuditEventType, Job, JobEventKind
from sessions_app.models.consents import ConsentStatus, ToolConsent
from sessions_app.models.states import status_move
from sessions_app.permissions import SessionAction, action_check
from sessions_app.services.audit import audit_record
from sessions_app.services.jobs import job_event
from sessions_app.services.locks import lock_session
from sessions_app.services.memory import answer_key, answer_remember, remembered_answer_for

CONSENT_REFUSED = "ACODE-TOL-007"
CONSENT_TIMED_OUT = "ACODE-TOL-008"
CONSENT_CLOSED = "ACODE-TOL-009"


def tool_consent_ask(
    *,
    session: AgentSession,
    job: Job | None,
    role: str,
    tool: str,
    target: str,
    rule: str,
    reason: str,
    arguments: dict[str, Any],
    asked_audit_id: int | None,
    timeout_seconds: float | None = None,
) -> ToolConsent:
    """Keep a call that waits for a person's answer (its ``asked`` audit row is the
    executor's decision row) and say so on the job's events (the page re-renders).
    ``timeout_seconds``: how long it waits (default ACODE_CONSENT_TIMEOUT_SECONDS).

    A person's answer to the same call in this session and role, remembered and not
    revoked (``sessions_app.services.memory``), answers it at once: "answered before by"."""
    waits = settings.ACODE_CONSENT_TIMEOUT_SECONDS if timeout_seconds is None else timeout_seconds
    timeout = timedelta(seconds=waits)
    key = answer_key(tool=tool, target=target[:2000], rule=rule[:300], arguments=arguments)
    remembered = remembered_answer_for(session=session, role=role, key=key)
    consent = ToolConsent.objects.create(
        session=session, job=job, role_slug=role, tool=tool, target=target[:2000],
        rule=rule[:300], reason=reason, arguments=arguments, asked_audit_id=asked_audit_id,
        expires_at=timezone.now() + timeout, remembered=remembered,
    )  # fmt: skip
    if remembered is not None:
        status = ConsentStatus.ALLOWED if remembered.allowed else ConsentStatus.DENIED
        note = f"answered before by {remembered.answered_by_name}" + (
            f": {remembered.note}" if remembered.note else ""
        )
        with transaction.atomic(), lock_session(session.pk):
            _close(consent, status, actor=remembered.answered_by_name,
                   user=remembered.answered_by, note=note, remembered=remembered.pk)  # fmt: skip
        return consent
    if job is not None:
        message = f"waiting for a person's consent to {target or tool} ({rule})"
        job_event(job, JobEventKind.NOTE, {"message": message, "consent": str(consent.pk)})
    return consent


def tool_consent_answer(
    *, consent_id: Any, session: AgentSession, user: User, allow: bool, note: str = ""
) -> ToolConsent:
    """A person's answer to a pending call of ``session``: allowed or denied, audited.
    Refused (ACODE-TOL-009) once it is answered, timed out or cancelled."""
    with transaction.atomic(), lock_session(session.pk) as locked:
        action_check(SessionAction.CONSENT_ANSWER, session=locked, user=user)
        consent = (
            ToolConsent.objects.select_for_update()
            .filter(pk=consent_id, session_id=locked.pk)
            .first()
        )
        if consent is None:
            raise AcodeError("ACODE-API-404", "No such consent request in this session.")
        if consent.status == ConsentStatus.PENDING and consent.expires_at <= timezone.now():
            _close(consent, ConsentStatus.TIMED_OUT, actor="system")  # kept: refused below
        elif consent.status == ConsentStatus.PENDING:
            status = ConsentStatus.ALLOWED if allow else ConsentStatus.DENIED
            _close(consent, status, actor=user.get_username(), user=user, note=note)
            answer_remember(consent, user=user, allowed=allow)
            return consent
    raise AcodeError(
        CONSENT_CLOSED,
        f"This call is no longer waiting for an answer ({consent.get_status_display()}).",
        {"consent": str(consent.pk), "status": consent.status},
    )


def tool_consent_await(consent: ToolConsent, *, job: Job | None = None) -> ToolConsent:
    """Wait for ``consent``'s answer: the answered row, or the row closed as timed out
    (after ``expires_at``) or cancelled (its job was asked to stop)."""
    poll = max(0.05, float(settings.ACODE_CONSENT_POLL_SECONDS))
    while True:
        consent.refresh_from_db()
        if consent.status != ConsentStatus.PENDING:
            return consent
        if job is not None and Job.objects.filter(pk=job.pk, cancel_requested=True).exists():
            return _close_pending(consent, ConsentStatus.CANCELLED)
        if timezone.now() >= consent.expires_at:
            return _close_pending(consent, ConsentStatus.TIMED_OUT)
        time.sleep(min(poll, max(0.0, (consent.expires_at - timezone.now()).total_seconds())))


def consent_refusal(consent: ToolConsent) -> tuple[str, str]:
    """What the model is told about a call that was not allowed: (code, reason)."""
    if consent.status == ConsentStatus.DENIED:
        reason = f"{consent.answered_by_name} refused this call ({consent.rule})"
        return CONSENT_REFUSED, reason + (f": {consent.note}" if consent.note else ".")
    if consent.status == ConsentStatus.TIMED_OUT:
        waited = round((consent.expires_at - consent.created_at).total_seconds())
        return CONSENT_TIMED_OUT, (
            f"Nobody allowed this call ({consent.rule}) within {waited} s; it was denied."
        )
    return CONSENT_TIMED_OUT, "The job was cancelled while this call waited for a person's consent."


def _close_pending(consent: ToolConsent, status: str) -> ToolConsent:
    """Close a consent nobody answered (unless an answer came first), audited."""
    with transaction.atomic(), lock_session(consent.session_id):
        locked = ToolConsent.objects.select_for_update().get(pk=consent.pk)
        if locked.status == ConsentStatus.PENDING:
            _close(locked, status, actor="system")
    return locked


def _close(
    consent: ToolConsent,
    status: str,
    *,
    actor: str,
    user: User | None = None,
    note: str = "",
    remembered: int | None = None,
) -> None:
    """Record the end of a consent: its row, its audit row, a job event. ``remembered``:
    answered by that remembered answer (``actor`` is who gave it)."""
    by_person = user is not None or remembered is not None
    status_move(
        consent, status, answered_at=timezone.now(), answered_by=user,
        answered_by_name=actor if by_person else "", note=note[:2000],
    )  # fmt: skip
    phase: dict[str, str] = {ConsentStatus.TIMED_OUT: "timed_out",
                             ConsentStatus.CANCELLED: "cancelled"}  # fmt: skip
    result: dict[str, str] = {ConsentStatus.ALLOWED: "allowed", ConsentStatus.DENIED: "denied",
                              ConsentStatus.CANCELLED: "cancelled"}  # fmt: skip
    audit_record(
        event_type=AuditEventType.TOOL_CONSENT, actor=actor, session=consent.session,
        role=consent.role_slug, target=f"{consent.tool} {consent.target}".strip()[:1000],
        result=result.get(status, CONSENT_TIMED_OUT),
        details={"phase": phase.get(status, "answered"), "consent": str(consent.pk),
                 "tool": consent.tool, "rule": consent.rule, "note": note[:2000],
                 "asked": consent.asked_audit_id,
                 **({"remembered": remembered} if remembered is not None else {})},
    )  # fmt: skip
    if consent.job_id is not None:
        job = Job.objects.filter(pk=consent.job_id).first()
        if job is not None:
            said = (
                f"{consent.get_status_display().lower()}"
                + (f" by {actor}" if by_person else "")
                + (" (answered before)" if remembered is not None else "")
            )
            job_event(job, JobEventKind.NOTE, {"message": f"consent {said}",
                                               "consent": str(consent.pk)})  # fmt: skip
