"""Celery tasks: thin wrappers that take ids and call services.

Services import this module to enqueue; tasks import services inside their bodies, so
the two never import each other at load time.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from celery import Task, shared_task
from celery.signals import task_prerun, worker_ready
from django.db import close_old_connections

from roles.registry import registry

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="acode.run_job", acks_late=True, reject_on_worker_lost=True)
def run_job_task(self: Task, job_id: str) -> str:
    """Run one job. ``acks_late``: a worker killed mid-job leaves the message to be redelivered."""
    from sessions_app.agent.loop import run_job
    from sessions_app.services.runs import run_after_job

    # Which worker took it from which queue: the job's running event records both.
    delivery = self.request.delivery_info or {}
    worker = {"worker": self.request.hostname, "queue": delivery.get("routing_key")}
    status = str(run_job(job_id, worker={k: str(v) for k, v in worker.items() if v}).status)
    # A job of a run moves the run on. Also on a redelivery after a worker died between
    # the job's end and this line: the run never waits on a message that was lost.
    run_after_job(job_id)
    return status


@task_prerun.connect
def _sync_registry(**kwargs: Any) -> None:
    # Every task starts from the role data as it is now, in this process too.
    registry.sync()


@shared_task(name="acode.recover_lost_jobs")
def recover_lost_jobs_task() -> list[str]:
    """Requeue or fail jobs whose worker stopped sending heartbeats, resume runs stopped
    between stages and send pushes again that never went (Celery beat, periodic)."""
    from sessions_app.services.deliveries import deliveries_push_stalled
    from sessions_app.services.job_recovery import jobs_recover_stale
    from sessions_app.services.runs import runs_resume_stalled

    recovered = jobs_recover_stale()
    resumed = runs_resume_stalled()
    repushed = deliveries_push_stalled()
    if repushed:
        logger.warning("sent again %d push(es) still pending: %s", len(repushed), repushed)
    if resumed:
        logger.warning("resumed %d run(s) that stopped between stages: %s", len(resumed), resumed)
    if recovered:
        logger.warning(
            "recovered %d job(s) left running by a lost worker: %s", len(recovered), recovered
        )
    return recovered


@shared_task(name="acode.push_branch", acks_late=True)
def push_branch_task(commit_id: int) -> str:
    """Push a delivered commit's session branch to its repository's remote."""
    from sessions_app.services.deliveries import delivered_commit_push

    commit = delivered_commit_push(commit_id)
    return commit.push_status if commit is not None else "gone"


@shared_task(name="acode.audit_anchor")
def audit_anchor_task() -> int | None:
    """Seal every audit chain that moved since the last anchor (Celery beat, periodic)."""
    from sessions_app.services.audit import audit_anchor

    anchor = audit_anchor()
    return anchor.seq if anchor is not None else None


@shared_task(name="acode.backlog_schedule")
def backlog_schedule_task() -> list[str]:
    """Tasks follow their runs; ready tasks start while their project has room (Celery
    beat, every ACODE_BACKLOG_TICK_SECONDS)."""
    from sessions_app.services.backlog_scheduler import backlog_schedule

    return backlog_schedule()


@shared_task(name="acode.audit_verify")
def audit_verify_task() -> bool:
    """Verify the whole audit log and store the outcome (Celery beat, periodic)."""
    from sessions_app.services.audit_verify import audit_verify_record

    report, _ = audit_verify_record(actor="system")
    if not report.ok:
        logger.error("audit log verification failed: %s", report.problem)
    return report.ok


@shared_task(name="acode.search_index_build", acks_late=True)
def search_index_build_task(workspace: str) -> str:
    """Build a workspace's search index (created or attached, or searched before it had one)."""
    from sessions_app.services.search_index import search_index_build

    return search_index_build(Path(workspace)).state


@shared_task(name="acode.search_index_refresh", acks_late=True)
def search_index_refresh_task(workspace: str, paths: list[str]) -> int:
    """Index again the files a change applied to a workspace touched."""
    from sessions_app.services.search_index import search_index_refresh

    return search_index_refresh(Path(workspace), paths)


@worker_ready.connect
def _recover_lost_jobs(**kwargs: Any) -> None:
    # At start too: this worker may be the one that was lost. Its host's layers of sessions
    # archived elsewhere are freed too (services.archive).
    from sessions_app.services.archive import layers_sweep

    try:
        recover_lost_jobs_task()
        layers_sweep()
    finally:
        close_old_connections()
