"""Self-correction inside a step (issue 39): a stage that did not get there is tried again,
a bounded number of times, with what went wrong in its next request.

- Failing tests go back to the Coder with the failing output (the Tester's evidence, through
  the one channel to a model), up to the template's ``max_test_attempts`` attempts at the
  step (0: failing tests go on to the review, as before); then the step is blocked with the
  evidence and a person decides (the run's blocked path).
- A Coder stage that wrote nothing is retried ``NO_WRITE_RETRIES`` times with a note saying
  so, then fails fast with ACODE-JOB-009; a retry that answers exactly as the try before it
  fails at once.
- A Planner answer that is not a plan is retried ``PLAN_RETRIES`` time with the refusal
  shown, then fails with ACODE-JOB-008.
- Before a step is blocked or a Coder that wrote nothing fails, the step moves to the next
  model the Coder role names (``routing.reassignment``), and its attempts count again there.

The engine asks ``after_failure`` and ``after_tests`` what follows and carries it out; each
attempt is a stage of its own whose reason says which attempt it is (shown on the run,
audited with its run event). ``retry_note`` is what the next stage's request adds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sessions_app.containment import model_data
from sessions_app.models import Job, Run, RunStage, StagePurpose, StageStatus
from sessions_app.services.runs.routing import reassigned_at, reassignment
from sessions_app.services.runs.stages import (
    ERROR,
    FAILED,
    ORCHESTRATOR,
    TIMED_OUT,
    StageOutcome,
    evidence_text,
)

NO_WRITE_RETRIES = 1  # a Coder stage that wrote nothing is tried once more
PLAN_RETRIES = 1  # a Planner answer that is not a plan is tried once more (spec 004)
FAILING = (FAILED, ERROR, TIMED_OUT)  # test results that send the step back to the Coder
NO_WRITE, NOT_A_PLAN = "ACODE-JOB-009", "ACODE-JOB-008"
ANSWER_CHARS = 2_000  # how much of a refused answer its retry is shown


@dataclass(frozen=True)
class Again:
    """What follows a stage that did not get there: enter it again (``retry``, with
    ``why`` said in the new stage's reason; on ``model`` when the step was reassigned), or
    give up saying ``why``."""

    retry: bool
    why: str
    model: str = ""


def tests_failed(stage: RunStage) -> bool:
    """A test stage whose Tester ran tests and they did not pass."""
    evidence = stage.evidence or {}
    if str(evidence.get("status", "")).startswith("error: the command did not run"):
        return False  # the Tester's command was refused: nothing the Coder can fix
    return bool(evidence.get("ran")) and evidence.get("result") in FAILING


def _step_stages(run: Run, stage: RunStage) -> list[RunStage]:
    """The plan step's stages up to ``stage``, the latest first."""
    return list(
        run.stages.filter(plan_step=stage.plan_step, seq__lte=stage.seq)
        .exclude(purpose=StagePurpose.APPROVAL)
        .order_by("-seq")
    )


def test_attempts(run: Run, test: RunStage) -> int:
    """The Coder's attempts at the step whose tests failed in a row, ending with ``test``:
    a review, a passing test, a block a person answered or a move to another model starts
    a new count."""
    count = 0
    stages = _step_stages(run, test)
    since = reassigned_at(stages)
    for stage in stages:
        if stage.purpose == StagePurpose.REVIEW or stage.seq < since:
            break
        if stage.purpose != StagePurpose.TEST:
            continue
        blocked = stage.questions.filter(asked_by=ORCHESTRATOR).exists()
        if not tests_failed(stage) or (blocked and stage.pk != test.pk):
            break
        count += 1
    return count


def after_tests(run: Run, test: RunStage) -> Again | None:
    """After a test stage: back to the Coder while its tests fail and attempts are left,
    blocked once they are spent; ``None``: go on (they passed, or the template sends
    failing tests to the review)."""
    limit = run.template.max_test_attempts
    if not limit or not tests_failed(test):
        return None
    attempts = test_attempts(run, test)
    status = test.evidence.get("status", "")
    if attempts < limit:
        return Again(True, f"attempt {attempts + 1} of {limit}; last test run: {status}")
    moved = reassignment(run, test.plan_step)
    if moved is not None:
        why = f"{attempts} attempts; last test run: {status}"
        return Again(True, moved.said(why), model=moved.to)
    command = test.evidence.get("command", "")
    return Again(
        False,
        f"The tests of plan step {test.plan_step} still fail after {attempts} attempts "
        f"({command}: {status}); the failing output is test stage {test.seq}'s evidence. "
        "Answer to give the Coder guidance and try again, or cancel the run.",
    )


def after_failure(run: Run, stage: RunStage, outcome: StageOutcome) -> Again | None:
    """After a failed stage: a Coder that wrote nothing or a Planner's answer that was not
    a plan is tried again while retries are left; ``None``: any other failure ends the run."""
    if stage.purpose == StagePurpose.CODE and outcome.code == NO_WRITE:
        return _after_no_write(run, stage, outcome)
    if stage.purpose == StagePurpose.PLAN and outcome.code == NOT_A_PLAN:
        tries = _in_a_row(run, stage, lambda s: _job_code(s) == NOT_A_PLAN)
        if len(tries) <= PLAN_RETRIES:
            return Again(True, "retry: the last answer was not a plan")
        return Again(False, f"{outcome.message} It was retried once with the refusal shown.")
    return None


def _after_no_write(run: Run, stage: RunStage, outcome: StageOutcome) -> Again:
    tries = _in_a_row(run, stage, lambda s: bool((s.evidence or {}).get("wrote_nothing")))
    if len(tries) >= 2 and tries[0].evidence.get("summary") == tries[1].evidence.get("summary"):
        why = f"{outcome.message} Its retry answered exactly as the try before."
    elif len(tries) <= NO_WRITE_RETRIES:
        return Again(True, "retry: the Coder's last try wrote nothing")
    else:
        times = "once" if NO_WRITE_RETRIES == 1 else f"{NO_WRITE_RETRIES} times"
        why = f"{outcome.message} It was retried {times} with a note saying so."
    moved = reassignment(run, stage.plan_step)
    if moved is not None:
        return Again(True, moved.said(f"{len(tries)} tries that wrote nothing"), model=moved.to)
    return Again(False, why)


def _in_a_row(run: Run, stage: RunStage, failed: Callable[[RunStage], bool]) -> list[RunStage]:
    """The step's stages of ``stage``'s purpose that failed the same way in a row, ending
    with ``stage`` (the latest first)."""
    tries = []
    for earlier in _step_stages(run, stage):
        if earlier.purpose != stage.purpose:
            continue
        if (
            earlier.status != StageStatus.FAILED
            or not failed(earlier)
            or earlier.model != stage.model
        ):
            break
        tries.append(earlier)
    return tries


def _job_code(stage: RunStage) -> str:
    if stage.job_id is None:
        return ""
    return Job.objects.filter(pk=stage.job_id).values_list("error_code", flat=True).first() or ""


def retry_note(before: RunStage | None, purpose: str) -> str:
    """What a stage of ``purpose`` entered after ``before`` adds to its request: the failing
    tests, the note that the Coder wrote nothing, or the refusal of the Planner's answer
    ("": none of these)."""
    if before is None:
        return ""
    if purpose == StagePurpose.CODE and before.purpose == StagePurpose.TEST:
        if not tests_failed(before):
            return ""
        return f"## The tests failed: fix the code so they pass\n{evidence_text(before.evidence)}"
    if before.purpose != purpose or before.status != StageStatus.FAILED:
        return ""
    if purpose == StagePurpose.CODE and (before.evidence or {}).get("wrote_nothing"):
        return (
            "## Your last try wrote nothing\nThe last try at this step ended without writing "
            "a file, so nothing changed. Make the change with the file tools before you "
            "answer."
        )
    job = Job.objects.filter(pk=before.job_id).first() if before.job_id else None
    if purpose == StagePurpose.PLAN and job is not None and job.error_code == NOT_A_PLAN:
        answer = model_data(job.result[:ANSWER_CHARS], source="your refused answer")
        return f"## Your last answer was refused\n{job.error_message}\n{answer}"
    return ""
