"""Recovering jobs nobody will run: messages lost or never sent, workers that died, jobs
whose run's budget was spent before they started (see ``jobs.py`` for how a job reaches a
worker)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from acode.workers import queue_has_consumer
from roles.registry import registry
from sessions_app.models import Job, JobEventKind, JobStatus
from sessions_app.models.states import status_move_where
from sessions_app.services.jobs import MAX_ATTEMPTS, job_enqueue_later, job_event, job_finish
from sessions_app.services.locks import lock_job


def jobs_resend_queued() -> list[str]:
    """Send the message of jobs waiting for the broker, and again that of jobs queued too
    long without starting.

    A job whose message the broker could not take waits for it (``broker_wait_since``):
    it is sent on every sweep until the broker takes it. A worker that died holding a
    job's message (taken, not yet started), or Redis restarted empty, leaves the job
    ``queued`` with no message anyone will deliver: it is sent again after
    ``ACODE_JOB_RESEND_SECONDS``. A duplicate is harmless: ``job_start`` skips a job that
    is final or running. ``heartbeat_at`` of a queued job is when its message was last sent.
    """
    cutoff = timezone.now() - timedelta(seconds=settings.ACODE_JOB_RESEND_SECONDS)
    overdue = Q(created_at__lt=cutoff) & (Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=cutoff))
    resent: list[str] = []
    for job in (
        Job.objects.filter(status=JobStatus.QUEUED)
        .filter(overdue | Q(broker_wait_since__isnull=False))
        .select_related("role")
    ):
        queue = registry.resolve(job.role.slug).spec.queue
        waiting = job.broker_wait_since is not None
        if not waiting and not queue_has_consumer(queue):
            continue  # nobody would take it; the job already says so (no_consumer)
        with transaction.atomic():
            if Job.objects.filter(pk=job.pk, status=JobStatus.QUEUED).update(
                heartbeat_at=timezone.now()
            ):
                if not waiting:  # (a waiting job's note comes when the broker takes it)
                    job_event(
                        job, JobEventKind.NOTE, {"message": "queued too long; message sent again"}
                    )
                transaction.on_commit(job_enqueue_later(job, queue))
                resent.append(str(job.pk))
    return resent


def job_expire(job: Job, *, code: str, message: str) -> bool:
    """Fail a job that has not started (still queued); False if it started or ended."""
    with transaction.atomic():
        locked = lock_job(job.pk)
        if locked.status != JobStatus.QUEUED:
            return False
        job_finish(locked, JobStatus.FAILED, code=code, message=message)
    return True


def jobs_recover_stale() -> list[str]:
    """Requeue (or fail) running jobs whose worker stopped sending heartbeats, and send
    again the messages of jobs queued too long (``jobs_resend_queued``).

    Called when a worker starts; a job is never left ``running`` by a dead worker.
    """
    jobs_resend_queued()
    cutoff = timezone.now() - timedelta(seconds=settings.ACODE_JOB_STALE_SECONDS)
    recovered: list[str] = []
    for job in Job.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=cutoff).select_related(
        "role"
    ):
        if job.attempts >= MAX_ATTEMPTS:
            job_finish(
                job,
                JobStatus.FAILED,
                code="ACODE-JOB-005",
                message="the worker running this job was lost twice",
            )
        else:
            with transaction.atomic():
                updated = status_move_where(
                    Job.objects.filter(pk=job.pk, heartbeat_at__lt=cutoff),
                    JobStatus.RUNNING,
                    JobStatus.QUEUED,
                )
                if updated:
                    job_event(job, JobEventKind.NOTE, {"message": "worker lost; job requeued"})
                    queue = registry.resolve(job.role.slug).spec.queue
                    transaction.on_commit(job_enqueue_later(job, queue))
        recovered.append(str(job.pk))
    return recovered
