"""Celery tasks: thin wrappers that take ids and call services."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from celery import shared_task
from celery.signals import task_prerun, worker_ready
from django.conf import settings
from django.db import close_old_connections

from roles.registry import registry

logger = logging.getLogger(__name__)


@shared_task(name="acode.run_job", acks_late=True, reject_on_worker_lost=True)
def run_job_task(job_id: str) -> str:
    """Run one job. ``acks_late``: a worker killed mid-job leaves the message to be redelivered."""
    from sessions_app.agent import run_job

    return str(run_job(job_id).status)


@task_prerun.connect
def _sync_registry(**kwargs: Any) -> None:
    # Every task starts from the role data as it is now, in this process too.
    registry.sync()


def _recover_once() -> None:
    from sessions_app.jobs import jobs_recover_stale

    recovered = jobs_recover_stale()
    if recovered:
        logger.warning(
            "recovered %d job(s) left running by a lost worker: %s", len(recovered), recovered
        )


def _recover_forever() -> None:
    # Another host's worker may die while this one keeps running: look again regularly.
    while True:
        time.sleep(settings.ACODE_JOB_STALE_SECONDS)
        try:
            _recover_once()
        except Exception:
            logger.exception("recovering lost jobs failed")
        finally:
            close_old_connections()


@worker_ready.connect
def _recover_lost_jobs(**kwargs: Any) -> None:
    _recover_once()
    threading.Thread(target=_recover_forever, name="acode-job-recovery", daemon=True).start()
