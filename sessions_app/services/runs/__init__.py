"""Orchestrated runs: a workflow template executed in a session as a chain of jobs."""

from __future__ import annotations

from sessions_app.services.runs.engine import (
    run_advance,
    run_after_job,
    run_start,
    runs_resume_stalled,
)
from sessions_app.services.runs.gate import approval_digest
from sessions_app.services.runs.people import (
    run_answer,
    run_approve,
    run_cancel,
    run_question_ask,
    run_reject,
    run_review_record,
)
from sessions_app.services.runs.requests import stage_request
from sessions_app.services.runs.seed import runs_seed_defaults

__all__ = [
    "approval_digest",
    "run_advance",
    "run_after_job",
    "run_answer",
    "run_approve",
    "run_cancel",
    "run_question_ask",
    "run_reject",
    "run_review_record",
    "run_start",
    "runs_resume_stalled",
    "runs_seed_defaults",
    "stage_request",
]
