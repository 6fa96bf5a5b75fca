"""The run engine: the one place a run moves, and the one function that decides how.

``advance`` is called with the run and its session locked, by the run's jobs when they end
(``run_advance``: from the Celery task through ``run_after_job``, and from the periodic
sweep, ``runs_resume_stalled``), by ``run_start``, and by people's actions (``people.py``:
an answer, an approval, a rejection, a cancel), which record what the person did and hand
the engine a ``RunEvent``. The engine closes the stage whose job ended
(``stages.stage_close``), asks ``next_move`` what follows (a pure decision over the run,
its stages, the outcome and the event) and carries that out: a stage started, resumed or
paused, the run blocked, at its approval gate, completed or finished. No other module
starts a stage or ends a run, and every move is recorded here: the run's audit row and its
live event.

What follows a stage that did not get there is part of that decision (issue 39, spec 003:
a blocked task "reassigns to a different agent/model"):

- **Tried again** (``after_tests``, ``after_failure``), a bounded number of times, with what
  went wrong in the next stage's request (``retry_note``): failing tests go back to the
  Coder with the failing output, up to the template's ``max_test_attempts`` (0: failing
  tests go on to the review); a Coder stage that wrote nothing is retried
  ``NO_WRITE_RETRIES`` times, then fails fast with ACODE-JOB-009 (a retry that answers
  exactly as the try before fails at once); a Planner answer that is not a plan is retried
  ``PLAN_RETRIES`` time with the refusal shown, then fails with ACODE-JOB-008. Each attempt
  is a stage of its own whose reason says which attempt it is.
- **Moved to another model** (``reassignment``) before a step is blocked or a Coder that
  wrote nothing fails: the next of the Coder role's ``reassign_models`` the step has not
  tried; attempts count again from there. None left: blocked (a person decides) or failed.
- **Which model a stage asks** (``stage_model``): its template stage's, else its role's
  preferred one ("": the settings' default endpoint, named ``default`` here); a step's later
  Coder stages keep the model its Coder was moved to. A template with
  ``review_model_differs`` has each review asked of a model other than the Coder's
  (``review_candidate``); ``reviewer_refusal`` is the check ``run_start`` makes
  (ACODE-RUN-013). Models are compared by endpoint name as templates and roles route them
  (a project's ``.acode/config.yml`` ``role_models`` is not part of the comparison).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from itertools import pairwise
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from acode.errors import AcodeError
from acode.text import headline
from roles.registry import registry
from sessions_app.containment import model_data
from sessions_app.models import (
    FINAL_JOB_STATUSES,
    AgentSession,
    ApprovalStatus,
    AuditEventType,
    Job,
    JobStatus,
    Run,
    RunApproval,
    RunQuestion,
    RunStage,
    RunStatus,
    StagePurpose,
    StageStatus,
    StepStatus,
    WorkflowStage,
    WorkflowTemplate,
)
from sessions_app.models.states import status_move, status_move_where
from sessions_app.services.audit import publish_session_event, session_record
from sessions_app.services.changes import changes_commit, pending_digest
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.job_recovery import job_expire
from sessions_app.services.jobs import job_stop
from sessions_app.services.locks import lock_session
from sessions_app.services.plans import plan_step_update
from sessions_app.services.runs.stages import (
    ERROR,
    FAILED,
    ORCHESTRATOR,
    PASSED,
    TIMED_OUT,
    StageOutcome,
    budget_left,
    evidence_text,
    stage_close,
    stage_resume,
    stage_start,
)
from sessions_app.services.transitions import session_transition

LOOP_PURPOSES = (StagePurpose.CODE, StagePurpose.TEST, StagePurpose.REVIEW)


class Person(StrEnum):
    """What a person did to a run."""

    ANSWERED = "answered"
    APPROVED = "approved"
    REJECTED = "rejected"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class RunEvent:
    """A person's action the engine acts on (who, and the answer or reason they gave)."""

    kind: Person
    who: str
    user: User | None = None
    text: str = ""
    question: RunQuestion | None = None
    digest: str = ""  # APPROVED: the pending changes' digest the approval covered


class Move(StrEnum):
    """What the engine does next."""

    WAIT = "wait"  # a stage's job is still working
    START = "start"  # enter a template stage
    RESUME = "resume"  # a stage that asked a person goes on with the answer
    PAUSE = "pause"  # a stage asked a person: wait for the answer
    BLOCK = "block"  # the run cannot go on alone: ask a person
    GATE = "gate"  # wait for a person to approve
    COMPLETE = "complete"  # commit what was approved and end the run
    FINISH = "finish"  # end the run without committing


@dataclass(frozen=True)
class Next:
    """``next_move``'s answer, with what carrying it out needs."""

    move: Move
    index: int = 0  # START: the template stage; GATE: its position
    step: int = 0
    revision: int = 0
    status: str = ""  # FINISH: how the run ends
    code: str = ""
    message: str = ""
    done_step: int = 0  # a plan step a review just approved (marked done first)
    question: RunQuestion | None = None
    revise: bool = False  # START of a revision: counts against the run's bound
    retry: str = ""  # START of a stage again (``retries``): which attempt, and why
    model: str = ""  # START of a Coder moved to another model (``routing.reassignment``)


def template_stages(run: Run) -> list[WorkflowStage]:
    return list(run.template.stages.select_related("role").order_by("position"))


def run_advance(run_id: Any) -> Run:
    """Move a run on if its current stage is done (a job ended, or the sweep found one)."""
    with transaction.atomic():
        run = lock_run(run_id)
        if run.status != RunStatus.RUNNING:
            return run
        with lock_session(run.session_id) as session:
            advance(run, session)
    return run


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


def advance(run: Run, session: AgentSession, event: RunEvent | None = None) -> None:
    """Close the stage whose job ended, decide what follows and do it; the run and its
    session are locked by the caller. A refusal on the way (a transition, a spent budget)
    ends the run, saying why; one while committing an approval goes back to the approver."""
    last = run.stages.order_by("-seq").first()
    outcome = None
    if last is not None and last.status == StageStatus.RUNNING:
        job = Job.objects.get(pk=last.job_id) if last.job_id else None
        if job is not None and not job.is_final and _cancelling(event):
            if job.status == JobStatus.QUEUED:  # not started: nothing to wait for
                job = job_stop(job=job, actor=event.who if event else "")
            else:
                who = event.who if event else ""
                message = f"Cancel requested by {who}; stops when the current stage ends."
                _carry_out(run, session, Next(Move.WAIT, message=message), event, last)
                return
        if job is not None and not job.is_final:
            return  # still working; its end calls us again
        outcome = stage_close(run, session, last, job)
    try:
        _carry_out(run, session, next_move(run, session, last, outcome, event), event, last)
    except AcodeError as exc:
        if event is not None and event.kind == Person.APPROVED:
            raise  # the approver is told, and nothing of the approval is kept
        run_finish(run, session, RunStatus.FAILED, exc.code, exc.message)


def _cancelling(event: RunEvent | None) -> bool:
    return event is not None and event.kind == Person.CANCELLED


def next_move(
    run: Run,
    session: AgentSession,
    last: RunStage | None,
    outcome: StageOutcome | None,
    event: RunEvent | None,
) -> Next:
    """What the run does next: the one place this is decided."""
    if run.cancel_requested:
        by = f" by {event.who}" if _cancelling(event) and event is not None else ""
        return Next(Move.FINISH, status=RunStatus.CANCELLED, message=f"Run cancelled{by}")
    if event is not None:
        return _after_person(run, event)
    if last is not None and outcome is not None and outcome.status == StageStatus.FAILED:
        return _after_failure(run, last, outcome)
    if outcome is not None and outcome.status == StageStatus.AWAITING_INPUT:
        return Next(Move.PAUSE, question=outcome.question)
    stages = template_stages(run)
    if last is None:
        return _enter(run, stages, 0, step=1, revision=0)
    index = next(i for i, s in enumerate(stages) if s.position == last.position)
    if last.purpose in (StagePurpose.PLAN, StagePurpose.EXPLORE):
        return _enter(run, stages, index + 1, step=1, revision=0)
    if last.purpose == StagePurpose.CODE and _no_progress(run, last):
        moved = reassignment(run, last.plan_step)
        if moved is not None:  # another model may get further than this one
            return Next(
                Move.START, index=index, step=last.plan_step, revision=last.revision,
                retry=moved.said("a revision that changed nothing"), model=moved.to,
            )  # fmt: skip
        return Next(
            Move.FINISH,
            status=RunStatus.FAILED,
            code="ACODE-RUN-007",
            message=f"No progress: the Coder's revision of plan step {last.plan_step} left "
            "the changes exactly as they were.",
        )
    again = after_tests(run, last) if last.purpose == StagePurpose.TEST else None
    if again is not None:
        return _tests_failed(stages, last, again)
    if last.purpose in (StagePurpose.CODE, StagePurpose.TEST):
        return _enter(run, stages, index + 1, step=last.plan_step, revision=last.revision)
    return _after_review(run, session, stages, last)


def _after_failure(run: Run, last: RunStage, outcome: StageOutcome) -> Next:
    """A failed stage ends the run, unless ``after_failure`` enters it again (a Coder that wrote
    nothing, a Planner's answer that was not a plan)."""
    again = after_failure(run, last, outcome)
    if again is not None and again.retry:
        stages = template_stages(run)
        index = next(i for i, s in enumerate(stages) if s.position == last.position)
        return Next(
            Move.START, index=index, step=last.plan_step, revision=last.revision,
            retry=again.why, model=again.model,
        )  # fmt: skip
    message = again.why if again is not None else outcome.message
    return Next(Move.FINISH, status=RunStatus.FAILED, code=outcome.code, message=message)


def _tests_failed(stages: list[WorkflowStage], test: RunStage, again: Again) -> Next:
    """The step's tests failed: back to the Coder with them (on the next model the Coder
    role names once its attempts are spent), or blocked when none is left (a person's
    answer sends it back to the Coder, ``_after_person``)."""
    if not again.retry:
        return Next(Move.BLOCK, message=again.why)
    code = next(i for i, s in enumerate(stages) if s.purpose == StagePurpose.CODE)
    return Next(
        Move.START, index=code, step=test.plan_step, revision=test.revision, retry=again.why,
        model=again.model,
    )  # fmt: skip


def _commit_subject(run: Run) -> str:
    """The commit's subject: the run's short id and the request's first words, whole (who
    approved is in the body and on the delivery)."""
    return f"Run {str(run.pk)[:8]}: {headline(run.request)}"


def _after_person(run: Run, event: RunEvent) -> Next:
    if event.kind == Person.REJECTED:
        message = f"Rejected by {event.who}: {event.text}"
        return Next(Move.FINISH, status=RunStatus.REJECTED, message=message)
    if event.kind == Person.APPROVED:
        return Next(Move.COMPLETE, message=_commit_subject(run))
    assert event.kind == Person.ANSWERED and event.question is not None
    stage = event.question.stage
    if stage is not None and stage.status == StageStatus.AWAITING_INPUT:
        return Next(Move.RESUME, question=event.question)
    # A blocked run: the step goes back to the Coder with the answer (the bound restarts).
    stages = template_stages(run)
    code = next(i for i, s in enumerate(stages) if s.purpose == StagePurpose.CODE)
    step = (stage.plan_step if stage is not None else 1) or 1
    return Next(Move.START, index=code, step=step, revision=0)


def _no_progress(run: Run, stage: RunStage) -> bool:
    """A revision that left the changes exactly as the Coder's previous try did."""
    previous = (
        run.stages.filter(purpose=StagePurpose.CODE, plan_step=stage.plan_step, seq__lt=stage.seq)
        .order_by("-seq")
        .first()
    )
    return previous is not None and previous.progress == stage.progress


def _after_review(
    run: Run, session: AgentSession, stages: list[WorkflowStage], review: RunStage
) -> Next:
    verdict = review.verdict.get("verdict")
    code = next(i for i, s in enumerate(stages) if s.purpose == StagePurpose.CODE)
    last_step = len(session.plan or [])
    if verdict == "request_changes":
        # The final review's findings go to the last plan step's Coder, as its next revision.
        step, revision = (
            (review.plan_step, review.revision)
            if review.plan_step
            else _last_revision(run, last_step)
        )
        limit = run.template.max_revisions_per_step
        if revision >= limit or run.revisions >= run.template.max_revisions_per_run:
            bound = (
                f"{limit} revisions of plan step {step}"
                if revision >= limit
                else f"{run.template.max_revisions_per_run} revisions in the run"
            )
            return Next(
                Move.BLOCK,
                message=f"The Reviewer still requests changes after {bound}. Answer to give "
                "the Coder guidance and try again, or cancel the run.",
            )
        return Next(Move.START, index=code, step=step, revision=revision + 1, revise=True)
    if verdict != "approve":
        return Next(
            Move.BLOCK,
            message="The Reviewer ended without a verdict (approve or request changes).",
        )
    number = review.plan_step
    done = number if number and any(s["number"] == number for s in session.plan or []) else 0
    if 0 < number < last_step:
        return Next(Move.START, index=code, step=number + 1, revision=0, done_step=done)
    if run.template.final_review and number:  # then the whole change once more
        index = next(i for i, s in enumerate(stages) if s.purpose == StagePurpose.REVIEW)
        return Next(Move.START, index=index, step=0, revision=0, done_step=done)
    loop_end = max(i for i, s in enumerate(stages) if s.purpose in LOOP_PURPOSES)
    return _enter(run, stages, loop_end + 1, step=0, revision=0, done_step=done)


def _last_revision(run: Run, step: int) -> tuple[int, int]:
    """(the plan step, its Coder's last revision): where the final review's requested
    changes go (the Coder's request carries the final review's findings)."""
    code = run.stages.filter(purpose=StagePurpose.CODE, plan_step=step).order_by("-seq")
    return step or 1, code.values_list("revision", flat=True).first() or 0


def _enter(
    run: Run,
    stages: list[WorkflowStage],
    index: int,
    *,
    step: int,
    revision: int,
    done_step: int = 0,
) -> Next:
    """Start the stage at ``index``; past the end or at the gate: approval, or complete."""
    if index < len(stages) and stages[index].purpose != StagePurpose.APPROVAL:
        return Next(Move.START, index=index, step=step, revision=revision, done_step=done_step)
    refusal = tests_refusal(run)
    if refusal:  # the template requires passing tests: the run cannot pass without them
        return Next(Move.FINISH, status=RunStatus.FAILED, code="ACODE-RUN-012", message=refusal)
    if not run.gate_required:
        return Next(Move.COMPLETE, done_step=done_step, message=_commit_subject(run))
    position = stages[index].position if index < len(stages) else len(stages)
    return Next(Move.GATE, index=position, done_step=done_step)


def _carry_out(
    run: Run, session: AgentSession, nxt: Next, event: RunEvent | None, last: RunStage | None
) -> None:
    if nxt.done_step:
        plan_step_update(
            session=session, number=nxt.done_step, status="done", actor=ORCHESTRATOR,
            run_id=run.pk,
        )  # fmt: skip
    if event is not None and event.kind == Person.ANSWERED:
        run.revisions = 0 if run.status == RunStatus.BLOCKED else run.revisions
        status_move(run, RunStatus.RUNNING, message="", revisions=run.revisions)
    if nxt.move == Move.WAIT:
        run.message = nxt.message
        run.save(update_fields=["message", "updated_at"])
        publish_run(run)
    elif nxt.move == Move.START:
        if nxt.revise:
            run.revisions += 1
            run.save(update_fields=["revisions", "updated_at"])
        template_stage = template_stages(run)[nxt.index]
        model = stage_model(run, template_stage, step=nxt.step, moved_to=nxt.model)
        stage = stage_start(
            run, session, template_stage, step=nxt.step, revision=nxt.revision,
            retry=nxt.retry, note=retry_note(last, template_stage.purpose), model=model,
        )  # fmt: skip
        _stage_entered(run, session, stage, retry=nxt.retry)
        if stage.status == StageStatus.SUCCEEDED:  # reused (``reuse.py``): go on at once
            advance(run, session)
    elif nxt.move == Move.RESUME:
        assert nxt.question is not None and nxt.question.stage is not None
        stage_resume(run, session, nxt.question.stage, nxt.question)
        _stage_entered(run, session, nxt.question.stage)
    elif nxt.move == Move.PAUSE:
        assert nxt.question is not None
        message = f"Waiting for an answer: {nxt.question.question}"
        run_pause(run, session, RunStatus.AWAITING_INPUT, message)
    elif nxt.move == Move.BLOCK:
        RunQuestion.objects.create(run=run, stage=last, asked_by=ORCHESTRATOR, question=nxt.message)
        run_pause(run, session, RunStatus.BLOCKED, nxt.message)
    elif nxt.move == Move.GATE:
        gate_enter(run, session, nxt.index)
    elif nxt.move == Move.COMPLETE:
        digest = event.digest if event is not None else _reviewed_digest(session, last)
        run_complete(
            run, session, summary=nxt.message, digest=digest,
            user=event.user if event else None,
        )  # fmt: skip
    else:
        run_finish(run, session, nxt.status, nxt.code, nxt.message)


def _stage_entered(run: Run, session: AgentSession, stage: RunStage, retry: str = "") -> None:
    """A stage's job is queued: the run says so (audited, and live), and which attempt a
    stage entered again is."""
    run_record(
        run, session, EventKind.RUN_UPDATED, f"stage {stage.seq} {stage.purpose}",
        reason=stage.reason, job=str(stage.job_id), **({"retry": retry} if retry else {}),
        **({"model": stage.model} if stage.model else {}),
    )  # fmt: skip


# -- the approval gate -------------------------------------------------------------------


def approval_digest(run: Run, session: AgentSession) -> str:
    """What an approval is bound to: the run, exactly what is pending (each change's diff
    and the id of the content that approval commits), and the versions of the roles its
    stages ran in."""
    versions = sorted(
        {
            (registry.by_id(role_id).slug, registry.by_id(role_id).content_hash)
            for role_id in run.stages.exclude(role=None).values_list("role_id", flat=True)
        }
    )
    payload = {"run": str(run.pk), "changes": pending_digest(session), "roles": versions}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def gate_enter(run: Run, session: AgentSession, position: int) -> RunApproval:
    """The run reached its approval gate (the template's, or one its risk requires)."""
    RunStage.objects.create(
        run=run,
        seq=run.stages.count() + 1,
        position=position,
        purpose=StagePurpose.APPROVAL,
        status=StageStatus.AWAITING_APPROVAL,
        reason="Waiting for a person to approve",
    )
    return gate_open(run, session)


def gate_open(run: Run, session: AgentSession) -> RunApproval:
    """Ask for approval of exactly what is pending now (superseding any earlier request)."""
    status_move_where(run.approvals.all(), ApprovalStatus.PENDING, ApprovalStatus.SUPERSEDED)
    approval = RunApproval.objects.create(
        run=run,
        digest=approval_digest(run, session),
        expires_at=timezone.now() + timedelta(minutes=run.template.approval_ttl_minutes),
    )
    run_pause(
        run,
        session,
        RunStatus.AWAITING_APPROVAL,
        f"Waiting for approval of {session.pending_changes.count()} pending changes "
        f"(digest {approval.digest[:12]}).",
    )
    return approval


# -- the end of a run --------------------------------------------------------------------
# A template may require passing tests before a run can pass (by default the tiers in
# ``ACODE_RUN_REQUIRE_TESTS_TIERS``: medium and high); a run that passed without passing
# tests says so in its message (issue 34).


def requires_tests(run: Run) -> bool:
    """Whether the run passes only with passing tests: its template's setting, else by
    its tier."""
    own = run.template.require_tests
    if own is not None:
        return bool(own)
    return run.effective_tier in settings.ACODE_RUN_REQUIRE_TESTS_TIERS


def _last_evidence(run: Run) -> list[Mapping[str, Any]]:
    """The evidence of each plan step's last test stage, in step order."""
    last: dict[int, Mapping[str, Any]] = {}
    for stage in run.stages.filter(purpose=StagePurpose.TEST).order_by("seq"):
        last[stage.plan_step] = stage.evidence or {}
    return [last[step] for step in sorted(last)]


def tests_verdict(run: Run) -> tuple[bool, str]:
    """(whether the run's tests passed, what they said in words): every plan step's last
    test stage passed; "no tests were run" when it had none or its Tester ran none."""
    evidence = _last_evidence(run)
    if not evidence:
        return False, "no tests were run (the workflow has no test stage)"
    for found in evidence:
        if not found.get("ran"):
            return False, "no tests were run (the Tester ran no test command)"
        if found.get("result", PASSED if "result" not in found else "") != PASSED:
            return False, f"the last test run ended: {found.get('status') or 'unknown'}"
    return True, "tests passed"


def tests_refusal(run: Run) -> str:
    """Why the run may not pass for its tests ("": it may)."""
    if not requires_tests(run):
        return ""
    passed, said = tests_verdict(run)
    if passed:
        return ""
    return (
        f"The {run.template.name} workflow requires passing tests before a run can pass, "
        f"and {said}."
    )


def tests_note(run: Run) -> str:
    """What a passing run's message adds when its tests did not pass ("": they did)."""
    passed, said = tests_verdict(run)
    return "" if passed else f"Note: {said}."


def _reviewed_digest(session: AgentSession, last: RunStage | None) -> str:
    """The pending changes' digest the approving review saw (``submit_review`` records
    it); a template without a review stage approves what its run left."""
    if last is not None and last.purpose == StagePurpose.REVIEW:
        return str(last.verdict.get("digest", ""))
    return pending_digest(session)


def run_complete(
    run: Run, session: AgentSession, *, summary: str, digest: str, user: User | None = None
) -> None:
    """Commit the approved changes on the session branch and end the run. ``digest`` is
    what the approval saw (the gate's, or the last review's): other changes than that are
    not committed (ACODE-CHG-002 ends the run)."""
    status_move_where(
        run.stages.all(), StageStatus.AWAITING_APPROVAL, StageStatus.SUCCEEDED,
        finished_at=timezone.now(),
    )  # fmt: skip
    if session.pending_changes.exists():
        changes_commit(
            session=session, digest=digest, summary=summary, actor=ORCHESTRATOR, user=user,
            run_id=run.pk,
        )  # fmt: skip
    # A run that passed without passing tests says so (the hand-back's reason does not).
    note = tests_note(run)
    run_finish(run, session, RunStatus.SUCCEEDED, "", "All steps complete",
               note=f". {note}" if note else "")  # fmt: skip


def run_finish(
    run: Run, session: AgentSession, status: str, code: str, message: str, *, note: str = ""
) -> None:
    """End the run and hand the session back to Default."""
    now = timezone.now()
    status_move(run, status, error_code=code, message=message + note, finished_at=now)
    status_move_where(
        run.stages.all(),
        [StageStatus.AWAITING_INPUT, StageStatus.AWAITING_APPROVAL],
        StageStatus.CANCELLED,
        finished_at=now,
    )
    if status != RunStatus.SUCCEEDED:  # the step being worked on did not get done
        step_status = StepStatus.PENDING if status == RunStatus.CANCELLED else StepStatus.FAILED
        stuck = [s["number"] for s in session.plan or [] if s.get("status") == "in_progress"]
        for number in stuck:
            plan_step_update(
                session=session, number=number, status=step_status, actor=ORCHESTRATOR,
                run_id=run.pk,
            )  # fmt: skip
    default = registry.default()
    if session.current_role_id != default.id:
        reason = message if status == RunStatus.SUCCEEDED else f"Run {status}: {message}"
        session_transition(
            session=session, to_role=default.slug, reason=reason[:500], actor=ORCHESTRATOR,
            run_id=run.pk,
        )  # fmt: skip
    if session.active_run_id == run.pk:
        session.active_run = None
        session.save(update_fields=["active_run", "updated_at"])
    run_record(run, session, EventKind.RUN_FINISHED, status, code=code, message=message + note)


# -- the run's own record: its lock, its audit rows and live events, pausing -------------


def lock_run(run_id: Any) -> Run:
    """Lock one run row, read with its template (which is not locked)."""
    return Run.objects.select_for_update(of=("self",)).select_related("template").get(pk=run_id)


def publish_run(run: Run, kind: EventKind = EventKind.RUN_UPDATED) -> None:
    """Tell the open pages the run changed, after commit, with no audit row (a message)."""
    data = {"run": str(run.pk), "status": run.status}
    transaction.on_commit(lambda: publish_session_event(run.session_id, kind, data))


def run_record(
    run: Run, session: AgentSession, kind: EventKind, result: str, **details: Any
) -> None:
    """A move of the run: its audit row and its live event (``audit.session_record``)."""
    session_record(
        session,
        kind,
        event_type=AuditEventType.RUN_EVENT,
        actor=ORCHESTRATOR,
        target=f"run {run.pk}",
        result=result,
        details=details,
        data={"run": str(run.pk), "status": run.status},
    )


def run_pause(run: Run, session: AgentSession, status: str, message: str) -> None:
    """The run waits (for an answer, an approval, a decision), saying why."""
    status_move(run, status, message=message)
    run_record(run, session, EventKind.RUN_UPDATED, status, message=message)


# Which model a stage asks, and where a step that did not get there moves (issue 39).

DEFAULT = "default"  # what an empty model name routes to


def named(model: str) -> str:
    """A model endpoint's name as the run says it ("" is the default endpoint)."""
    return model or DEFAULT


def configured_model(stage: WorkflowStage) -> str:
    """The model a template stage routes to: its own, else its role's preferred one."""
    if stage.model or stage.role_id is None:
        return stage.model
    return registry.by_id(stage.role_id).spec.preferred_model


def _used(run: Run, stage: RunStage) -> str:
    """The model a run stage asked: where the run routed it, else its template stage's (its
    role's, should the template have lost that stage since)."""
    if stage.model:
        return stage.model
    template_stage = run.template.stages.filter(position=stage.position).first()
    if template_stage is not None:
        return configured_model(template_stage)
    return registry.by_id(stage.role_id).spec.preferred_model if stage.role_id else ""


def _coder_stages(run: Run, step: int) -> list[RunStage]:
    """The plan step's Coder stages, the latest first (``step`` 0: the whole run's)."""
    stages = run.stages.filter(purpose=StagePurpose.CODE)
    if step:
        stages = stages.filter(plan_step=step)
    return list(stages.order_by("-seq"))


@dataclass(frozen=True)
class Reassignment:
    """Where a blocked step moves: ``to`` the next model, ``away`` from the one it used."""

    to: str
    away: str

    def said(self, why: str) -> str:
        return f"reassigned to model {self.to} from {named(self.away)} after {why}"


def reassignment(run: Run, step: int) -> Reassignment | None:
    """The next of the Coder role's ``reassign_models`` the plan step has not tried, after
    the model its last Coder stage used; None when none is left."""
    coders = _coder_stages(run, step)
    if not step or not coders or coders[0].role_id is None:
        return None
    tried = {named(_used(run, stage)) for stage in coders}
    for name in registry.by_id(coders[0].role_id).spec.reassign_models:
        if named(name) not in tried:
            return Reassignment(to=name, away=_used(run, coders[0]))
    return None


def reassigned_at(stages: list[RunStage]) -> int:
    """The seq of the latest of ``stages`` (a step's, the latest first) where its Coder was
    moved to another model (0: never): attempts count again from there."""
    coders = [s for s in stages if s.purpose == StagePurpose.CODE]
    for newer, older in pairwise(coders):
        if newer.model != older.model:
            return newer.seq
    return 0


def stage_model(run: Run, template_stage: WorkflowStage, *, step: int, moved_to: str) -> str:
    """The model the run routes a stage it enters to ("": its template stage's or role's,
    as before): a Coder moved to ``moved_to`` or earlier in the step, or the reviewer a
    template requiring a different one gets."""
    if template_stage.purpose == StagePurpose.CODE:
        if moved_to:
            return moved_to
        coders = _coder_stages(run, step) if step else []
        return coders[0].model if coders else ""
    if template_stage.purpose == StagePurpose.REVIEW and run.template.review_model_differs:
        coders = _coder_stages(run, step) or _coder_stages(run, 0)
        if not coders:
            return ""  # nothing was written, so no author to differ from
        author = _used(run, coders[0])
        found = review_candidate(template_stage, author)
        if found is None:
            raise _no_other_reviewer(run.template, template_stage, author)
        return found
    return ""


def review_candidate(review: WorkflowStage, author: str) -> str | None:
    """The first model a review stage may ask that is not ``author``: its own (or its
    role's), else one of its role's ``reassign_models``; None when every one is the
    author's."""
    candidates = [configured_model(review)]
    if review.role_id is not None:
        candidates += registry.by_id(review.role_id).spec.reassign_models
    return next((name for name in candidates if named(name) != named(author)), None)


def reviewer_refusal(template: WorkflowTemplate) -> AcodeError | None:
    """Why a run of ``template`` may not start: it requires a review by a model other than
    the Coder's, and a review stage has none (None: it may start)."""
    if not template.review_model_differs:
        return None
    stages = list(template.stages.select_related("role").order_by("position"))
    coder = next((s for s in stages if s.purpose == StagePurpose.CODE), None)
    if coder is None:
        return None
    author = configured_model(coder)
    for review in stages:
        if review.purpose == StagePurpose.REVIEW and review_candidate(review, author) is None:
            return _no_other_reviewer(template, review, author)
    return None


def _no_other_reviewer(
    template: WorkflowTemplate, review: WorkflowStage, author: str
) -> AcodeError:
    own = named(configured_model(review))
    return AcodeError(
        "ACODE-RUN-013",
        f"The {template.name} workflow requires a review by a model other than the Coder's "
        f"({named(author)}), and its review stage (model {own}) has no other: give the review "
        "stage a model, or the Reviewer role a preferred or reassign model, that differs "
        "from the Coder's.",
        {
            "template": template.slug,
            "stage": review.position,
            "author_model": named(author),
            "review_model": own,
        },
    )


# What follows a stage that did not get there: tried again, or given up (issue 39).

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
