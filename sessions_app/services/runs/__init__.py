"""Orchestrated runs: a workflow template executed in a session as a chain of jobs.

Four modules, each named for what it holds: ``engine`` decides and makes every move of a run
(what follows a stage, tries again and moves to another model included; its approval gate;
whether it may pass without passing tests; its moving on after jobs); ``stages`` carries out
entering and closing a stage (what it is asked, its budget, reusing an earlier run's plan,
what it produced: a test stage's evidence, the risk a request, plan or changes raise);
``start`` begins one; ``people`` records what people do to it and hands that to the engine.
``seed`` and ``portability`` are its templates as shipped and as YAML.
"""

from __future__ import annotations

from sessions_app.services.runs.engine import (
    approval_digest,
    run_advance,
    run_after_job,
    runs_resume_stalled,
)
from sessions_app.services.runs.people import run_answer, run_approve, run_cancel, run_reject
from sessions_app.services.runs.seed import runs_seed_defaults
from sessions_app.services.runs.stages import run_question_ask, run_review_record, stage_request
from sessions_app.services.runs.start import run_start, template_chosen

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
    "template_chosen",
]
