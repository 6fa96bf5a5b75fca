"""Writes to jobs: create and enqueue, record events, cancel, finish, recover lost ones.

How a job reaches a worker, whatever goes wrong on the way (README, "Resilience"):

- A person's new job (and a new run, ``run_start``) is refused with 503 while the broker
  does not answer (``require_broker``), before anything is written: nothing is left behind
  and the same request can be sent again at once.
- Every accepted job's message is sent after its transaction commits (``_enqueue``). If the
  broker cannot take it then, the job stays queued, marked as waiting for the broker
  (``broker_wait_since``), and the periodic re-send (``job_recovery.jobs_resend_queued``) sends it when
  the broker is back. Nothing accepted is failed for a broker that is briefly away; a run's
  job waits at most until the run's budget is spent (``runs_resume_stalled``).
- A message delivered twice (a re-send, or the broker's redelivery of a message a killed
  worker never acknowledged) is skipped by ``job_start`` with a log line.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from acode.broker import broker_reachable
from acode.errors import AcodeError
from acode.workers import queue_has_consumer
from roles.registry import RoleDef, registry
from sessions_app.models import (
    FINAL_JOB_STATUSES,
    AgentSession,
    AuditEventType,
    Job,
    JobEvent,
    JobEventKind,
    JobStatus,
    RunStage,
)
from sessions_app.models.states import status_move
from sessions_app.permissions import SessionAction, action_check
from sessions_app.services.audit import actor_name, audit_record, publish_job_event
from sessions_app.services.locks import lock_job, lock_session
from sessions_app.tasks import run_job_task  # service -> task; tasks import services lazily

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 2  # a job whose worker died is run once more, then failed
# What a worker counted on its copy of the job, saved with the job's end.
USAGE_FIELDS = (
    "llm_calls",
    "tokens_in",
    "tokens_out",
    "model",
    "endpoint",
    "provider",
    "fallback_used",
)


@dataclass(frozen=True)
class JobLimits:
    """Caps on top of the role's own limits, and the model endpoint to use (a run's)."""

    llm_calls: int | None = None
    tokens: int | None = None
    seconds: int | None = None
    model: str = ""


# A job's events: appended in order, one INSERT each, pushed live after commit.
_next_seq: OrderedDict[Any, int] = OrderedDict()  # job id -> last seq written by this process
_seq_lock = threading.Lock()


def job_event(job: Job, kind: str, data: dict[str, Any]) -> JobEvent:
    """Append an event to a job (ordered) and push it live after commit.

    The last sequence number is remembered per process, so an event is one INSERT; a
    concurrent writer (another process cancelling, say) is caught by the unique
    constraint, and the number is read again.
    """
    for _ in range(5):
        with _seq_lock:
            last = _next_seq.get(job.pk)
        if last is None:
            last = job.events.aggregate(m=Max("seq"))["m"] or 0
        try:
            if connection.in_atomic_block:
                with transaction.atomic():  # a savepoint, so a clash does not spoil the caller
                    event = JobEvent.objects.create(job=job, seq=last + 1, kind=kind, data=data)
            else:
                event = JobEvent.objects.create(job=job, seq=last + 1, kind=kind, data=data)
        except IntegrityError:
            with _seq_lock:
                _next_seq.pop(job.pk, None)
            continue
        with _seq_lock:
            _next_seq[job.pk] = event.seq
            _next_seq.move_to_end(job.pk)
            while len(_next_seq) > 1000:
                _next_seq.popitem(last=False)
        break
    else:  # pragma: no cover
        raise RuntimeError("could not append a job event")
    transaction.on_commit(lambda: publish_job_event(job.session_id, job.pk, event.seq, kind, data))
    return event


def require_broker() -> None:
    """Refuse to start a person's run or job while the broker does not answer (503).

    Asked before anything is written, so the refusal leaves no run or job behind. What
    was accepted never fails this way: see ``_enqueue``."""
    if not broker_reachable():
        raise AcodeError(
            "ACODE-API-503",
            "The task queue (Redis) cannot be reached right now; nothing was started. "
            "Submit it again in a moment.",
        )


def _enqueue(job: Job, queue: str) -> None:
    """Send the job's message (after its commit); a broker away leaves it waiting."""
    from kombu.exceptions import OperationalError as BrokerUnreachable
    from redis.exceptions import RedisError

    try:
        # ignore_result: the job's outcome lives in the database and nobody reads the task's
        # result. Asking for one subscribed this process to a result channel per job, and
        # with Redis down that blocked ~20 s, then broke Celery's result consumer for good.
        run_job_task.apply_async(args=(str(job.pk),), queue=queue, ignore_result=True)
    except (BrokerUnreachable, RedisError) as exc:
        _wait_for_broker(job, queue, exc)
        return
    if job.broker_wait_since is not None and Job.objects.filter(
        pk=job.pk, broker_wait_since__isnull=False
    ).update(broker_wait_since=None):
        job.broker_wait_since = None
        job_event(job, JobEventKind.NOTE, {"message": "the task queue is back; message sent"})


def _wait_for_broker(job: Job, queue: str, exc: Exception) -> None:
    # The job committed and stays queued: the re-send delivers it once the broker is back
    # (a run's job is failed only when the run's budget is spent, runs_resume_stalled).
    logger.warning("could not queue job %s on %s (it waits for the broker): %s", job.pk, queue, exc)
    with transaction.atomic():
        if Job.objects.filter(
            pk=job.pk, status=JobStatus.QUEUED, broker_wait_since__isnull=True
        ).update(broker_wait_since=timezone.now()):
            job_event(
                job,
                JobEventKind.NOTE,
                {
                    "warning": "broker_unreachable",
                    "queue": queue,
                    "message": "The task queue could not be reached; the job stays queued "
                    "and is sent when it is back.",
                },
            )


def job_enqueue_later(job: Job, queue: str) -> Callable[[], None]:
    """Send the job's message when the transaction commits (``transaction.on_commit``)."""
    return lambda: _enqueue(job, queue)


def job_create(
    *,
    session: AgentSession,
    request: str,
    user: User | None = None,
    actor: str | None = None,
    run_stage: RunStage | None = None,
    limits: JobLimits | None = None,
    resumed_from: Job | None = None,
    commands: list[list[str]] | None = None,
) -> Job:
    """Queue a job in the session's current role, pinned to that role's version
    (``resumed_from``: the job it continues, which must have been in that role;
    ``commands``: a test stage's, which the job runs instead of asking a model).

    While a run is in progress only the run queues jobs (``run_stage``), with its
    stage's share of the run's budget and model (``limits``): ``permissions.action_refusal``."""
    if not request or not request.strip():
        raise AcodeError("ACODE-API-400", "A job needs a non-blank request.", {"field": "request"})
    if run_stage is None:
        require_broker()  # a person's job; a run's job is never refused (it waits)
    who = actor_name(user, actor)
    limits = limits or JobLimits()
    # The role in force now (the locked row the caller holds, or a fresh one), held while
    # queuing.
    with lock_session(session.pk) as session:
        run_id = run_stage.run_id if run_stage is not None else None
        action_check(SessionAction.JOB_CREATE, session=session, user=user, run_id=run_id)
        role = registry.by_id(session.current_role_id)
        _resumes_in(resumed_from, role)
        job = Job.objects.create(
            session=session,
            role_id=role.id,
            role_version_id=role.version_id,
            request=request.strip(),
            created_by=who,
            run_stage=run_stage,
            limit_llm_calls=limits.llm_calls,
            limit_tokens=limits.tokens,
            limit_seconds=limits.seconds,
            model_override=limits.model,
            resumed_from=resumed_from,
            commands=commands or [],
        )
        queued = {"status": JobStatus.QUEUED, "role": role.slug, "queue": role.spec.queue}
        if resumed_from is not None:
            queued["resumes"] = str(resumed_from.pk)
        job_event(job, JobEventKind.STATUS, queued)
        audit_record(
            event_type=AuditEventType.JOB_EVENT,
            actor=who,
            session=session,
            role=role.slug,
            target=f"job {job.pk}",
            result="queued",
            details={"request": job.request[:500]},
        )
        transaction.on_commit(lambda: _enqueue(job, role.spec.queue))
        transaction.on_commit(lambda: _warn_if_unconsumed(job, role.spec.queue))
    return job


def job_resume(*, job: Job, user: User | None = None, actor: str | None = None) -> Job:
    """Continue a job that stopped at a limit (its budget, or a loop) with a fresh budget:
    a new job in the same session and role, on the same request, whose model is shown
    what the stopped one did (``agent.progress``). Seed 004's "resume with a fresh budget";
    a person decides, as for any job. Refused (ACODE-JOB-013) for a job that did not stop
    at a limit, a run's stage (its run retries it) or a sub-agent's (its parent decides)."""
    why = ""
    if job.status != JobStatus.LIMIT_EXCEEDED:
        why = f"it ended {job.status}; only a job stopped at a limit resumes"
    elif job.run_stage_id is not None:
        why = "it is a run's stage: the run retries or stops it"
    elif job.parent_id is not None:
        why = "it is a sub-agent's: the job that delegated it decides"
    if why:
        raise AcodeError(
            "ACODE-JOB-013", f"Job {job.pk} cannot be resumed: {why}.", {"status": job.status}
        )
    return job_create(
        session=job.session, request=job.request, user=user, actor=actor, resumed_from=job
    )


def _resumes_in(resumed_from: Job | None, role: RoleDef) -> None:
    """A job resumes in its own role: refused (ACODE-JOB-013) when the session left it."""
    if resumed_from is None or resumed_from.role_id == role.id:
        return
    ran = registry.by_id(resumed_from.role_id)
    raise AcodeError(
        "ACODE-JOB-013",
        f"Job {resumed_from.pk} ran in role {ran.name} and resumes there; the session is in "
        f"{role.name} now. Change its role first.",
        {"role": ran.slug, "current_role": role.slug},
    )


def job_start(job_id: Any, *, worker: Mapping[str, str] | None = None) -> Job | None:
    """Mark a queued (or requeued) job running for this attempt; None if it must not run.

    ``worker`` ({"worker": hostname, "queue": routing key} of the Celery delivery) is
    recorded on the running event, so a job shows which pool ran it.
    """
    with transaction.atomic():
        # No joins under FOR UPDATE (see lock_session); relations load lazily after.
        job = lock_job(job_id)
        # A message delivered again (a re-send, or the broker's redelivery of one a killed
        # worker never acknowledged) is skipped; the log line is all it leaves.
        if job.is_final:
            logger.info("job %s delivered again after it ended (%s); skipped", job.pk, job.status)
            return None
        if job.status == JobStatus.RUNNING and not job_stale(job):
            logger.info(
                "job %s delivered again while attempt %d runs; skipped", job.pk, job.attempts
            )
            return None
        if job.cancel_requested:
            job_finish(job, JobStatus.CANCELLED, message="cancelled before it started")
            return None
        job.attempts += 1
        if job.attempts > MAX_ATTEMPTS:
            job.save(update_fields=["attempts"])
            job_finish(
                job,
                JobStatus.FAILED,
                code="ACODE-JOB-005",
                message="the worker running this job was lost twice",
            )
            return None
        status_move(
            job, JobStatus.RUNNING, attempts=job.attempts,
            started_at=job.started_at or timezone.now(), heartbeat_at=timezone.now(),
        )  # fmt: skip
        job_event(
            job,
            JobEventKind.STATUS,
            {"status": JobStatus.RUNNING, "attempt": job.attempts, **(worker or {})},
        )
    return job


def job_heartbeat(job_id: Any) -> None:
    """The worker running a job is alive (``jobs_recover_stale`` looks for silent ones)."""
    Job.objects.filter(pk=job_id, status=JobStatus.RUNNING).update(heartbeat_at=timezone.now())


def job_record_usage(
    job: Job, *, tokens_in: int, tokens_out: int, model: str, endpoint: str, provider: str
) -> None:
    """Count one LLM call against the job (and show the worker is alive)."""
    job.llm_calls += 1
    job.tokens_in += tokens_in
    job.tokens_out += tokens_out
    job.model, job.endpoint, job.provider = model, endpoint, provider
    Job.objects.filter(pk=job.pk).update(
        llm_calls=job.llm_calls,
        tokens_in=job.tokens_in,
        tokens_out=job.tokens_out,
        model=job.model,
        endpoint=job.endpoint,
        provider=job.provider,
        fallback_used=job.fallback_used,
        heartbeat_at=timezone.now(),
    )


def job_finish(
    job: Job, status: str, *, result: str = "", code: str = "", message: str = ""
) -> Job:
    """Record a job's final status (idempotent for jobs already final)."""
    with transaction.atomic():
        locked = lock_job(job.pk)
        if locked.is_final:
            return locked
        usage = {name: getattr(job, name) for name in USAGE_FIELDS}
        status_move(
            locked, status, result=result, error_code=code, error_message=message,
            finished_at=timezone.now(), **usage,
        )  # fmt: skip
        job_event(locked, JobEventKind.STATUS, {"status": status, "code": code, "message": message})
        audit_record(
            event_type=AuditEventType.JOB_EVENT,
            actor="orchestrator",
            session=locked.session,
            role=locked.role.slug,
            target=f"job {locked.pk}",
            result=status if not code else f"{status} {code}",
            details={
                "llm_calls": locked.llm_calls,
                "tokens_in": locked.tokens_in,
                "tokens_out": locked.tokens_out,
            },
        )
    if job is not locked:
        job.refresh_from_db(fields=["status"])  # the caller's copy shows how the job ended
    # Its sub-agents (issue 41) stop with it; each stops its own when it ends.
    for child in Job.objects.filter(parent_id=locked.pk).exclude(status__in=FINAL_JOB_STATUSES):
        with suppress(AcodeError):  # it ended meanwhile
            job_stop(job=child, actor=f"job:{str(locked.pk)[:8]} ended")
    return locked


def job_cancel(
    *,
    job: Job,
    user: User | None = None,
    actor: str | None = None,
    run_id: uuid.UUID | None = None,
) -> Job:
    """Ask a job to stop: a queued job is cancelled at once, a running one at its next step.

    A job of the run executing in the session is stopped only by that run (``run_id``);
    a person cancels the run instead (``permissions.action_refusal``)."""
    with transaction.atomic():
        locked = lock_job(job.pk)
        # The job, then its session: the order job_finish locks them in.
        with lock_session(locked.session_id) as session:
            action_check(
                SessionAction.JOB_CANCEL, session=session, user=user, run_id=run_id, job=locked
            )
            _stop_requested(locked, actor_name(user, actor))
    return _cancelled_if_queued(locked)


def job_stop(*, job: Job, actor: str) -> Job:
    """The system stops a job it owns: a run's engine cancelling its own stage's queued job
    while it holds the session locked. Nobody's permission is asked (no person acts; the
    person's cancel of the run was checked by ``run_cancel``)."""
    with transaction.atomic():
        locked = lock_job(job.pk)
        _stop_requested(locked, actor)
    return _cancelled_if_queued(locked)


def _stop_requested(locked: Job, who: str) -> None:
    if locked.is_final:
        raise AcodeError(
            "ACODE-JOB-006",
            f"Job {locked.pk} already finished ({locked.status}).",
            {"status": locked.status},
        )
    locked.cancel_requested = True
    locked.save(update_fields=["cancel_requested"])
    job_event(locked, JobEventKind.NOTE, {"message": f"cancel requested by {who}"})


def _cancelled_if_queued(locked: Job) -> Job:
    if locked.status == JobStatus.QUEUED:
        return job_finish(locked, JobStatus.CANCELLED, message="cancelled before it started")
    return locked


def job_stale(job: Job) -> bool:
    """A running job whose worker has not sent a heartbeat for too long."""
    cutoff = timezone.now() - timedelta(seconds=settings.ACODE_JOB_STALE_SECONDS)
    return job.heartbeat_at is None or job.heartbeat_at < cutoff


def job_queue(job: Job) -> str:
    """The Celery queue a job was sent to (its queued event says), else its role's queue now."""
    data = (
        job.events.filter(kind=JobEventKind.STATUS, data__status=JobStatus.QUEUED)
        .order_by("seq")
        .values_list("data", flat=True)
        .first()
    )
    if isinstance(data, dict) and data.get("queue"):
        return str(data["queue"])
    return registry.by_id(job.role_id).spec.queue


def job_queue_consumed(job: Job) -> bool | None:
    """Whether a live worker consumes the queue a queued job waits on; None once it left it."""
    if job.status != JobStatus.QUEUED:
        return None
    return queue_has_consumer(job_queue(job))


def _warn_if_unconsumed(job: Job, queue: str) -> None:
    # A job on a queue nobody consumes would wait silently; say so on the job itself.
    if queue_has_consumer(queue):
        return
    job_event(
        job,
        JobEventKind.NOTE,
        {
            "warning": "no_consumer",
            "queue": queue,
            "message": f"No worker is consuming queue '{queue}'; the job waits until one starts.",
        },
    )
