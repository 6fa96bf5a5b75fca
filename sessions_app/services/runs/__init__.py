"""Orchestrated runs: a workflow template executed in a session as a chain of jobs.

``engine`` decides and makes every move of a run; ``start`` begins one; ``people`` records
what people do to it and hands that to the engine; ``stages`` carries out entering and
closing a stage; ``sweep`` moves runs on after jobs; ``budget``, ``gate``, ``requests``,
``risk`` answer one question each.
"""

from __future__ import annotations

from sessions_app.services.runs.engine import run_advance
from sessions_app.services.runs.gate import approval_digest
from sessions_app.services.runs.people import run_answer, run_approve, run_cancel, run_reject
from sessions_app.services.runs.requests import stage_request
from sessions_app.services.runs.seed import runs_seed_defaults
from sessions_app.services.runs.stages import run_question_ask, run_review_record
from sessions_app.services.runs.start import run_start
from sessions_app.services.runs.sweep import run_after_job, runs_resume_stalled

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
