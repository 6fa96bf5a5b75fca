"""Runs moved on from outside a request: when a job ends, and the periodic sweep for runs
that stopped between stages (a lost message, a job that never started)."""

from __future__ import annotations

from typing import Any

from acode.errors import AcodeError
from sessions_app.models import FINAL_JOB_STATUSES, Job, JobStatus, RunStage, RunStatus, StageStatus
from sessions_app.services.job_recovery import job_expire
from sessions_app.services.runs.budget import budget_left
from sessions_app.services.runs.engine import run_advance


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
