"""A run's budget: what is left of it, the one computation every stage and sweep uses."""

from __future__ import annotations

from acode.errors import AcodeError
from sessions_app.models import Run
from sessions_app.selectors.runs import run_usage
from sessions_app.services.jobs import JobLimits


def budget_left(run: Run) -> JobLimits:
    """What the run may still spend (its caps minus what its jobs used, and its wall time);
    ACODE-RUN-006 once any of them is spent."""
    usage = run_usage(run)
    calls = run.max_llm_calls - usage["used_llm_calls"]
    tokens = run.max_tokens - usage["used_tokens"]
    seconds = run.max_seconds - usage["elapsed_seconds"]
    if calls <= 0 or tokens <= 0 or seconds <= 0:
        spent = "LLM calls" if calls <= 0 else ("tokens" if tokens <= 0 else "wall time")
        raise AcodeError(
            "ACODE-RUN-006",
            f"The run's budget of {spent} is spent.",
            {"llm_calls_left": calls, "tokens_left": tokens, "seconds_left": seconds},
        )
    return JobLimits(llm_calls=calls, tokens=tokens, seconds=seconds)


def stage_limits(run: Run, *, llm_calls: int, tokens: int, seconds: int, model: str) -> JobLimits:
    """A stage's job limits: its own caps (0: none) within what is left of the run's."""
    left = budget_left(run)
    return JobLimits(
        llm_calls=_cap(llm_calls, left.llm_calls),
        tokens=_cap(tokens, left.tokens),
        seconds=_cap(seconds, left.seconds),
        model=model,
    )


def _cap(own: int | None, left: int | None) -> int | None:
    return min(own, left) if own and left is not None else left
