"""A run's stages: entering one (its role, what it is asked, its job within what is left
of the run's budget), closing one (what it produced: a test stage's evidence, following its
test command's exit status; the risk a plan or changes raise) and what a stage's job
reports while it works (a review verdict, a question for a person).

Risk is decided by acode, not by the acting model: signals an admin edits, evaluated on
the request and the template (``start``), the plan and the changes (closing their stages);
the effective tier is scored from the declared tier and each fired signal (``risk_of``),
and with the sensitive signals it says whether the run needs approval.

A plan or explore stage a run is about to enter is reused, not run again (seed 002: "stage
reuse can skip already-completed planner/explorer stages when plan shape and scope are
unchanged"), when an earlier run of the same session completed a stage of the same purpose
on the same basis: the same request (stripped), the same role at the same version (its
content hash), the same scope (the workspace base, the session's last delivered commit or
else its branch's start, and exactly the same pending changes) and the same plan shape (each
step's title and files, in order). A closing plan or explore stage records its basis in its
evidence (``stage_basis``); a reused stage copies the earlier one's evidence and says which
stage it reused, in its reason and in ``evidence.reused_from``.

The engine (``engine.py``) decides which stage comes next and records each move; these
functions carry it out.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from acode.error_codes import MODEL_FAILURE_CODES, MODEL_SETTINGS_HINT
from acode.errors import AcodeError
from roles.registry import registry
from sessions_app.containment import model_data
from sessions_app.models import (
    TIER_ORDER,
    AgentSession,
    DeliveredCommit,
    Job,
    JobEventKind,
    JobStatus,
    RiskSignal,
    RiskTier,
    Run,
    RunQuestion,
    RunStage,
    SignalKind,
    StagePurpose,
    StageStatus,
    WorkflowStage,
    WorkflowTemplate,
)
from sessions_app.models.states import status_move
from sessions_app.selectors.runs import run_usage
from sessions_app.services.changes import pending_digest
from sessions_app.services.jobs import JobLimits, job_create
from sessions_app.services.plans import plan_notes, plan_set, plan_step_update
from sessions_app.services.transitions import session_transition

ORCHESTRATOR = "orchestrator"  # the actor of everything a run does on its own
MAX_FINDINGS = 100
MAX_REQUEST_CHARS = 20_000
PLAN_FORMAT = (
    'Answer with the plan only, as JSON: {"complexity": "low|medium|high", "risks": ["..."], '
    '"steps": [{"title": "...", "detail": "...", "files": ["path"], "depends_on": [1], '
    '"acceptance": ["..."]}]}. Each step is one reviewable change; its acceptance criteria '
    "are what a reviewer checks it against. Estimate the whole plan's complexity and name "
    "its risks."
)


@dataclass
class PlanStep:
    """Where the run is in its plan."""

    number: int
    total: int
    title: str
    detail: str = ""
    files: list[str] = field(default_factory=list)
    acceptance: list[str] = field(default_factory=list)


def plan_step_of(session: AgentSession, number: int) -> PlanStep:
    plan = session.plan or []
    step = next((s for s in plan if s["number"] == number), None) or {"title": f"step {number}"}
    return PlanStep(
        number, len(plan), step["title"], step.get("detail", ""), step.get("files", []),
        step.get("acceptance", []),
    )  # fmt: skip


@dataclass(frozen=True)
class StageOutcome:
    """How a closed stage's job ended, for the engine: done, failed (why), or a question."""

    status: str
    code: str = ""
    message: str = ""
    question: RunQuestion | None = None


def stage_failure_message(stage: RunStage, job: Job | None) -> str:
    """Why a stage failed, in words a person reads (no raw status), with the fix when the
    model caused it."""
    role = registry.by_id(stage.role_id).name if stage.role_id else "approval"
    if job is None:
        return f"The {role} stage failed: its job is gone."
    how = {
        JobStatus.LIMIT_EXCEEDED: "stopped at a limit",
        JobStatus.CANCELLED: "was cancelled",
    }.get(JobStatus(job.status), "failed")
    reason = (job.error_message or "no reason given").rstrip()
    message = f"The {role} stage {how}: {reason}"
    if not message.endswith((".", "!", "?")):
        message += "."  # a sentence ends before the next one (issue 34)
    if job.error_code in MODEL_FAILURE_CODES:
        message += f" {MODEL_SETTINGS_HINT}"
    return message


def _reason(purpose: str, step: PlanStep, revision: int, run: Run) -> str:
    where = f"plan step {step.number}/{step.total}: {step.title}"
    if purpose == StagePurpose.PLAN:
        return f"Planning the request ({run.effective_tier} risk)"
    if purpose == StagePurpose.EXPLORE:
        return "Exploring the codebase before coding"
    if purpose == StagePurpose.CODE:
        return f"Revising {where} (revision {revision})" if revision else f"Executing {where}"
    if purpose == StagePurpose.TEST:
        return f"Testing plan step {step.number}/{step.total}"
    if not step.number:
        return "Reviewing the whole change against the request and every step's criteria"
    return f"Verifying plan step {step.number}/{step.total} completion"


def stage_start(
    run: Run,
    session: AgentSession,
    template_stage: WorkflowStage,
    *,
    step: int,
    revision: int,
    retry: str = "",
    note: str = "",
    model: str = "",
) -> RunStage:
    """Enter a template stage: move the (locked) session into its role with a reason a
    person reads, and queue its job within what is left of the run's budget. A stage
    entered again says why in its reason (``retry``: which attempt); ``note`` is what its
    request adds (``engine.retry_note``); ``model``: where the run routed it
    (``engine.stage_model``; "": the template stage's or role's)."""
    limits = stage_limits(
        run,
        llm_calls=template_stage.max_llm_calls,
        tokens=template_stage.max_tokens,
        seconds=template_stage.timeout_seconds,
        model=model or template_stage.model,
    )
    assert template_stage.role_id is not None  # only the gate has no role
    role = registry.by_id(template_stage.role_id)
    if template_stage.purpose == StagePurpose.CODE and not session.plan:
        _request_as_plan(run, session)
    earlier = reusable_stage(run, session, template_stage)
    if earlier is not None:
        return _stage_reuse(run, session, template_stage, earlier)
    plan_step = plan_step_of(session, step) if step else PlanStep(0, 0, "")
    reason = _reason(template_stage.purpose, plan_step, revision, run)
    reason += f" ({retry})" if retry else ""
    stage = _stage_entered(
        run,
        session,
        template_stage,
        reason=reason,
        plan_step=plan_step.number,
        revision=revision,
        model=model,
        # A code stage's progress is the changes' digest: what it was before, until it ends.
        progress=pending_digest(session) if template_stage.purpose == StagePurpose.CODE else "",
        reasoning_effort=role.spec.reasoning_effort,
    )
    if template_stage.purpose == StagePurpose.CODE and plan_step.number:
        plan_step_update(
            session=session, number=plan_step.number, status="in_progress",
            actor=ORCHESTRATOR, run_id=run.pk,
        )  # fmt: skip
    commands = list(template_stage.commands or [])
    if commands:  # no model: the job runs them (the host-validation lane)
        request = "Run the test stage's commands in order, stopping at the first that does "
        request += "not pass:\n" + "\n".join(f"- {shlex.join(argv)}" for argv in commands)
    else:
        request = stage_request(run, session, stage, plan_step, note=note)
    _stage_job(run, session, stage, request, limits, commands=commands)
    return stage


def _request_as_plan(run: Run, session: AgentSession) -> None:
    """No planning stage: the request is its own one-step plan (said so in the history)."""
    plan_set(
        session=session, steps=[{"title": run.request[:300]}], actor=ORCHESTRATOR,
        run_id=run.pk,
    )  # fmt: skip


def _stage_reuse(
    run: Run, session: AgentSession, template_stage: WorkflowStage, earlier: RunStage
) -> RunStage:
    """Enter a plan or explore stage by reusing an earlier run's (``reusable_stage``): the
    session passes through the role as the template orders it, no job runs, and the stage
    is done with the earlier one's evidence (a reused plan's risk is assessed again)."""
    stage = _stage_entered(
        run,
        session,
        template_stage,
        reason=reuse_reason(earlier),
        status=StageStatus.SUCCEEDED,
        evidence={**earlier.evidence, "reused_from": _ref(earlier)},
        finished_at=timezone.now(),
    )
    if stage.purpose == StagePurpose.PLAN:
        run_raise_risk(run, risk_assess(RiskInput(plan=tuple(session.plan)), where="plan"))
    return stage


def _stage_entered(
    run: Run, session: AgentSession, template_stage: WorkflowStage, *, reason: str, **fields: Any
) -> RunStage:
    """The session moved into the template stage's role with ``reason``, and the run's next
    stage row for it (``fields``: what differs between a stage run and a stage reused)."""
    assert template_stage.role_id is not None  # only the gate has no role
    role = registry.by_id(template_stage.role_id)
    session_transition(
        session=session, to_role=role.slug, reason=reason, actor=ORCHESTRATOR, run_id=run.pk
    )
    return RunStage.objects.create(
        run=run,
        seq=run.stages.count() + 1,
        position=template_stage.position,
        purpose=template_stage.purpose,
        role_id=role.id,
        reason=reason,
        **fields,
    )


def _ref(stage: RunStage) -> dict[str, Any]:
    return {"run": str(stage.run_id), "seq": stage.seq}


def _stage_job(
    run: Run,
    session: AgentSession,
    stage: RunStage,
    request: str,
    limits: Any,
    commands: list[list[str]] | None = None,
) -> None:
    job = job_create(
        session=session, request=request, actor=ORCHESTRATOR, run_stage=stage, limits=limits,
        commands=commands,
    )  # fmt: skip
    stage.job = job
    stage.save(update_fields=["job"])


def stage_resume(run: Run, session: AgentSession, stage: RunStage, question: RunQuestion) -> None:
    """A stage that asked a person goes on in the same role: a new job with the first
    one's request and the answer."""
    first = Job.objects.get(pk=stage.job_id) if stage.job_id else None
    assert first is not None  # a stage that asked had a job
    limits = stage_limits(
        run,
        llm_calls=first.limit_llm_calls or 0,
        tokens=first.limit_tokens or 0,
        seconds=0,
        model=first.model_override,
    )
    status_move(stage, StageStatus.RUNNING, finished_at=None)
    request = (
        f"{first.request}\n\n## You asked a person\nQ: {question.question}\nA: {question.answer}"
    )
    _stage_job(run, session, stage, request, limits)


def stage_close(run: Run, session: AgentSession, stage: RunStage, job: Job | None) -> StageOutcome:
    """Record how the stage's job ended and what it produced (its evidence, the risk its
    plan or changes raise); the engine decides what follows from the outcome."""
    now = timezone.now()
    if job is None or job.status != JobStatus.SUCCEEDED:
        cancelled = job is not None and job.status == JobStatus.CANCELLED
        status_move(
            stage, StageStatus.CANCELLED if cancelled else StageStatus.FAILED, finished_at=now
        )
        code = (job.error_code if job else "") or "ACODE-RUN-005"
        return StageOutcome(StageStatus.FAILED, code, stage_failure_message(stage, job))
    question = stage.questions.filter(answered_at__isnull=True).first()
    if question is not None:
        status_move(stage, StageStatus.AWAITING_INPUT, finished_at=now)
        return StageOutcome(StageStatus.AWAITING_INPUT, question=question)
    evidence, failure = _evidence(run, session, stage, job)
    if failure is not None:
        status_move(
            stage, StageStatus.FAILED, finished_at=now, evidence=evidence, progress=stage.progress
        )
        return failure
    status_move(
        stage, StageStatus.SUCCEEDED, finished_at=now, evidence=evidence, progress=stage.progress
    )
    return StageOutcome(StageStatus.SUCCEEDED)


def _evidence(
    run: Run, session: AgentSession, stage: RunStage, job: Job
) -> tuple[dict[str, Any], StageOutcome | None]:
    """What a successful job's stage produced; a code stage that changed nothing failed."""
    if stage.purpose == StagePurpose.PLAN:
        run_raise_risk(run, risk_assess(RiskInput(plan=tuple(session.plan)), where="plan"))
        assert stage.role_id is not None
        criteria = [
            {"step": s["number"], "title": s["title"], "acceptance": s["acceptance"]}
            for s in session.plan
            if s.get("acceptance")
        ]
        plan = {"steps": len(session.plan), **plan_notes(job.result), "criteria": criteria}
        return {**plan, "basis": stage_basis(run, session, stage.role_id)}, None
    if stage.purpose == StagePurpose.EXPLORE:
        assert stage.role_id is not None
        found = {"findings": job.result[:EVIDENCE_CHARS]}
        return {**found, "basis": stage_basis(run, session, stage.role_id)}, None
    if stage.purpose == StagePurpose.TEST:
        return tester_evidence(job), None
    if stage.purpose != StagePurpose.CODE:
        return {}, None
    before, stage.progress = stage.progress, pending_digest(session)
    if stage.progress == before and not stage.revision:  # revisions: ACODE-RUN-007
        wrote = {"changed": [], "wrote_nothing": True, "summary": job.result[:EVIDENCE_CHARS]}
        return wrote, StageOutcome(
            StageStatus.FAILED,
            "ACODE-JOB-009",
            f"The Coder stage of plan step {stage.plan_step} changed nothing: the model "
            f"ended without writing a file. {MODEL_SETTINGS_HINT}",
        )
    paths = tuple(session.pending_changes.values_list("path", flat=True))
    run_raise_risk(
        run, risk_assess(RiskInput(paths=paths), where=f"changes of step {stage.plan_step}")
    )
    # The files the plan names, beside the ones changed: what scope creep is measured
    # against (``selectors.quality``), as the plan was when the step was coded.
    planned = sorted({str(f) for s in session.plan or [] for f in s.get("files", [])})
    return {
        "changed": list(paths), "planned": planned, "summary": job.result[:EVIDENCE_CHARS]
    }, None  # fmt: skip


# -- what a test stage produced (issue 34) -----------------------------------------------
# Its evidence follows the test command's exit status, not whether the command ran.
# pytest's exit statuses are told apart (pytest is the command the Tester's rules allow);
# any other command's non-zero status is a failure.

PASSED, FAILED, NO_TESTS, ERROR, TIMED_OUT = "passed", "failed", "no_tests", "error", "timed_out"
PYTEST_STATUSES = {
    0: (PASSED, "passed"),
    1: (FAILED, "tests failed"),
    2: (ERROR, "error: the test run was interrupted"),
    3: (ERROR, "error: pytest's internal error"),
    4: (ERROR, "error: pytest was called wrongly"),
    5: (NO_TESTS, "no tests collected"),
}
_EXIT = re.compile(r"^exit (-?\d+)$")
EVIDENCE_CHARS = 4_000  # how much of a stage's output its evidence keeps


def outcome_of_tests(command: str, summary: str) -> tuple[str, str]:
    """(result, words) of a test command that ended as ``summary`` ("exit 5", "timed
    out", "killed (...)"): result is passed, failed, no_tests, error or timed_out."""
    found = _EXIT.match(summary.strip())
    if found is None:
        if summary.startswith("timed out"):
            return TIMED_OUT, "timed out"
        return ERROR, f"error: {summary or 'no exit status'}"
    code = int(found.group(1))
    if "pytest" in command and code in PYTEST_STATUSES:
        result, words = PYTEST_STATUSES[code]
    else:
        result, words = (PASSED, "passed") if code == 0 else (FAILED, "failed")
    return result, f"{words} (exit {code})"


def tester_evidence(job: Job) -> dict[str, Any]:
    """A test stage's evidence: the Tester's last test command, its result following its
    exit status (``outcome_of_tests``)."""
    for event in job.events.filter(kind=JobEventKind.TOOL_RESULT).order_by("-seq"):
        if event.data.get("name") in ("run_tests", "execute_command"):
            command = str(event.data.get("target", ""))
            ended = str(event.data.get("summary") or "")
            result, said = (
                outcome_of_tests(command, ended) if ended else (ERROR, "error: no exit status")
            )
            if event.data.get("status") != "ok":
                result, said = ERROR, f"error: the command did not run ({event.data.get('status')})"
            return {
                "ran": True,
                "result": result,
                "status": said,
                "command": command,
                "output": str(event.data.get("output", ""))[-EVIDENCE_CHARS:],
                "summary": job.result[:EVIDENCE_CHARS],
            }
    return {"ran": False, "result": NO_TESTS, "summary": job.result[:EVIDENCE_CHARS]}


# -- the risk a run's request, plan and changes raise ---------------------------------

# Words made of path characters; a path is one with a dot or slash before its last
# character. (One regex for both, [\w./-]*[./][\w./-]+, backtracks quadratically: 80 s
# for a 20,000-character request without a dot.)
_WORD = re.compile(r"[\w./-]+")
_PATH_LIKE = re.compile(r"[./].")


def _path_tokens(text: str) -> list[str]:
    return [word for word in _WORD.findall(text) if _PATH_LIKE.search(word)]


@dataclass(frozen=True)
class RiskInput:
    """What a signal can look at, at one point of a run."""

    request: str = ""
    plan: tuple[dict[str, Any], ...] = ()
    paths: tuple[str, ...] = ()
    failed_runs: int = 0
    unattended: str = ""  # the template's name when it has no approval gate (autonomy)


# The risk score (seed 002): the declared tier's points plus each fired signal's score;
# the score reaches a tier at its points. A fired signal's own tier is a floor besides.
TIER_POINTS = {RiskTier.LOW: 0, RiskTier.MEDIUM: 3, RiskTier.HIGH: 6}


@dataclass(frozen=True)
class Risk:
    """A run's effective risk: its tier, its score, and whether a sensitive tag or path
    fired (which opens the gate at medium)."""

    tier: str
    score: int
    sensitive: bool


def higher_tier(*tiers: str) -> str:
    """The highest of the given tiers."""
    return max(tiers, key=lambda tier: TIER_ORDER[RiskTier(tier)])


def risk_of(declared: str, fired: Iterable[dict[str, Any]]) -> Risk:
    """The effective risk of a run declared ``declared`` on which ``fired`` fired: each
    signal counts its score once, wherever it fired again."""
    scores: dict[str, int] = {}
    floors = [declared]
    sensitive = False
    for hit in fired:
        scores[hit["signal"]] = max(scores.get(hit["signal"], 0), int(hit.get("score", 0)))
        floors.append(hit["tier"])
        sensitive = sensitive or bool(hit.get("sensitive"))
    score = TIER_POINTS[RiskTier(declared)] + sum(scores.values())
    reached = [tier for tier, points in TIER_POINTS.items() if score >= points]
    return Risk(higher_tier(*floors, *reached), score, sensitive)


def _glob_hits(patterns: Iterable[str], paths: Iterable[str]) -> list[str]:
    hits = []
    for path in paths:
        clean = path.strip().lstrip("./")
        name = clean.rsplit("/", 1)[-1]
        if any(
            fnmatch.fnmatch(clean, pattern) or fnmatch.fnmatch(name, pattern)
            for pattern in patterns
        ):
            hits.append(clean)
    return sorted(set(hits))


def _fired(signal: RiskSignal, data: RiskInput) -> str:
    """Why the signal fires on ``data`` ('' when it does not)."""
    patterns = [str(p) for p in signal.patterns or [] if str(p).strip()]
    if signal.kind == SignalKind.REQUEST_KEYWORD:
        words = [
            p for p in patterns if re.search(rf"\b{re.escape(p)}", data.request, re.IGNORECASE)
        ]
        return f"the request mentions {', '.join(words)}" if words else ""
    if signal.kind == SignalKind.PATH_GLOB:
        plan_files = [f for step in data.plan for f in step.get("files", [])]
        mentioned = _path_tokens(data.request)
        hits = _glob_hits(patterns, [*data.paths, *plan_files, *mentioned])
        return f"touches {', '.join(hits[:5])}" if hits else ""
    if signal.kind == SignalKind.PLAN_STEPS:
        steps = len(data.plan)
        return (
            f"the plan has {steps} steps" if signal.threshold and steps >= signal.threshold else ""
        )
    if signal.kind == SignalKind.FAILED_RUNS:
        count = data.failed_runs
        return (
            f"the session had {count} failed or blocked runs"
            if signal.threshold and count >= signal.threshold
            else ""
        )
    if signal.kind == SignalKind.UNATTENDED and data.unattended:
        return f"the {data.unattended} template commits without a person approving"
    return ""


def risk_assess(data: RiskInput, *, where: str) -> list[dict[str, Any]]:
    """Every enabled signal that fires on ``data``, recorded as ``{signal, tier, score,
    sensitive, why, where}``."""
    fired = []
    for signal in RiskSignal.objects.filter(enabled=True):
        if why := _fired(signal, data):
            fired.append(
                {"signal": signal.name, "tier": signal.tier, "score": signal.score,
                 "sensitive": signal.sensitive, "why": why, "where": where}
            )  # fmt: skip
    return fired


def gate_required_for(risk: Risk, template: WorkflowTemplate) -> bool:
    """Is an approval gate required: the run's template has one, or the template for its
    effective tier does; high risk always, and medium when a sensitive tag or path fired."""
    if template.stages.filter(purpose=StagePurpose.APPROVAL).exists():
        return True
    if risk.tier == RiskTier.HIGH or (risk.tier == RiskTier.MEDIUM and risk.sensitive):
        return True
    tiered = (
        WorkflowTemplate.objects.filter(risk_tier=risk.tier, enabled=True).order_by("name").first()
    )
    return bool(tiered and tiered.stages.filter(purpose=StagePurpose.APPROVAL).exists())


def run_raise_risk(run: Run, fired: list[dict[str, Any]]) -> None:
    """New risk signals raise the run's score and tier (and may require the approval gate)."""
    known = {(s["signal"], s["where"]) for s in run.signals}
    new = [s for s in fired if (s["signal"], s["where"]) not in known]
    if not new:
        return
    run.signals = [*run.signals, *new]
    risk = risk_of(run.declared_tier, run.signals)
    run.effective_tier = higher_tier(run.effective_tier, risk.tier)
    run.risk_score = risk.score
    run.gate_required = run.gate_required or gate_required_for(risk, run.template)
    run.save(
        update_fields=["signals", "effective_tier", "risk_score", "gate_required", "updated_at"]
    )


# -- from a stage's job ------------------------------------------------------------------


def run_review_record(
    *, job: Job, verdict: str, summary: str, comments: list[Any], digest: str = ""
) -> None:
    """A review stage's verdict (``submit_review``), with the digest of the pending changes
    the Reviewer was shown: the run decides what follows, and commits an approval only if
    nothing changed since (``engine.run_complete``)."""
    findings = [
        {
            "path": str(c.get("path", ""))[:1000],
            "line": c.get("line") if isinstance(c.get("line"), int) else None,
            "body": str(c.get("body", ""))[:4000],
        }
        for c in comments[:MAX_FINDINGS]
        if isinstance(c, dict)
    ]
    assert job.run_stage_id is not None
    RunStage.objects.filter(pk=job.run_stage_id).update(
        verdict={
            "verdict": verdict, "summary": summary[:4000], "findings": findings,
            **({"digest": digest} if digest else {}),  # an approval: what it saw
        }
    )  # fmt: skip


def run_question_ask(*, job: Job, question: str) -> RunQuestion:
    """A stage asks a person (``ask_human``): the run pauses when the job ends."""
    assert job.run_stage_id is not None
    stage = RunStage.objects.select_related("run").get(pk=job.run_stage_id)
    return RunQuestion.objects.create(
        run=stage.run, stage=stage, asked_by=job.role.slug, question=question[:4000]
    )


# -- a stage's budget: what is left of the run's ---------------------------------------


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


# -- what a stage is asked ------------------------------------------------------------


def _findings_text(verdict: dict[str, Any]) -> str:
    lines = [f"Reviewer summary: {verdict.get('summary', '')}"]
    for finding in verdict.get("findings", []):
        where = finding.get("path", "")
        if finding.get("line"):
            where += f":{finding['line']}"
        lines.append(f"- {where + ': ' if where else ''}{finding.get('body', '')}")
    return "\n".join(lines)


def _answers_text(run: Run) -> str:
    answered = run.questions.filter(answered_at__isnull=False).order_by("answered_at")
    return "\n".join(f"Q: {q.question}\nA: {q.answer}" for q in answered)


def stage_request(
    run: Run, session: AgentSession, stage: RunStage, step: PlanStep, *, note: str = ""
) -> str:
    """The request a stage's job gets: the run's request, the step, and what earlier stages
    found (the plan, the Explorer's findings, the reviewer's findings, test results), and
    ``note``: why a stage entered again is (failing tests, nothing written, a refusal)."""
    parts: list[str] = []
    if stage.purpose == StagePurpose.PLAN:
        parts = [f"Plan this request: {run.request}", PLAN_FORMAT]
    elif stage.purpose == StagePurpose.EXPLORE:
        plan = "\n".join(f"{s['number']}. {s['title']}" for s in session.plan or [])
        parts = [
            "Explore the workspace for this request and report the files, entry points and "
            f"risks the Coder must know about: {run.request}",
            f"## Plan\n{plan}",
        ]
    elif stage.purpose == StagePurpose.CODE:
        parts = _code_parts(run, stage, step, note)
    elif stage.purpose == StagePurpose.TEST:
        parts = [
            f"Run the test suite for plan step {step.number}/{step.total}: {step.title}. "
            "Report whether the tests pass and what failed."
        ]
    elif stage.purpose == StagePurpose.REVIEW:
        parts = _review_parts(run, session, step)
    if note:
        parts.append(note)
    answers = _answers_text(run)
    if answers:
        parts.append(f"## Answers from a person\n{answers}")
    return "\n\n".join(parts)[:MAX_REQUEST_CHARS]


def _criteria_text(criteria: Iterable[str]) -> str:
    return "\n".join(f"- {criterion}" for criterion in criteria)


def _code_parts(run: Run, stage: RunStage, step: PlanStep, note: str) -> list[str]:
    parts = [f"Executing plan step {step.number}/{step.total}: {step.title}"]
    if step.detail:
        parts.append(step.detail)
    if step.files:
        parts.append("Files: " + ", ".join(step.files))
    if step.acceptance:
        parts.append(f"## Acceptance criteria of this step\n{_criteria_text(step.acceptance)}")
    parts.append(f"## The whole request\n{run.request}")
    explored = run.stages.filter(purpose=StagePurpose.EXPLORE, status=StageStatus.SUCCEEDED)
    for found in explored:
        parts.append(f"## Explorer's findings\n{found.evidence.get('findings', '')}")
    if stage.revision:
        review = _latest(run, StagePurpose.REVIEW, step, whole=True)
        if review is not None:
            parts.append("## Reviewer findings to address\n" + _findings_text(review.verdict))
        tested = _latest(run, StagePurpose.TEST, step)
        if tested is not None and not note:  # a note carries the failing tests
            parts.append(f"## Last test results\n{evidence_text(tested.evidence)}")
    return parts


REVIEW_HOW = (
    "Call submit_review with verdict approve or request_changes, a summary, and findings "
    "(comments) with file path and line."
)


def _review_parts(run: Run, session: AgentSession, step: PlanStep) -> list[str]:
    """A plan step's review (the request, the step's acceptance criteria and its test
    evidence), or the final review of the whole change (step 0: every step's criteria)."""
    if not step.number:
        plan = "\n".join(
            f"{s['number']}. {s['title']}\n{_criteria_text(s.get('acceptance', []))}".strip()
            for s in session.plan or []
        )
        return [
            "Review the whole change: every pending change together, against the request and "
            "each plan step's acceptance criteria.",
            REVIEW_HOW,
            f"## The request\n{run.request}",
            f"## The plan and each step's acceptance criteria\n{plan}",
        ]
    parts = [
        f"Review the pending changes for plan step {step.number}/{step.total}: {step.title}.",
        REVIEW_HOW,
        f"## The whole request\n{run.request}",
    ]
    if step.acceptance:
        parts.append(f"## Acceptance criteria of this step\n{_criteria_text(step.acceptance)}")
    tested = _latest(run, StagePurpose.TEST, step)
    if tested is not None:
        parts.append(f"## Test results (evidence)\n{evidence_text(tested.evidence)}")
    return parts


def _latest(run: Run, purpose: str, step: PlanStep, *, whole: bool = False) -> RunStage | None:
    """The plan step's last stage of this purpose (its last review, its last test);
    ``whole``: or the final review of the whole change, when that came later."""
    steps = [step.number, 0] if whole else [step.number]
    return run.stages.filter(purpose=purpose, plan_step__in=steps).order_by("-seq").first()


def evidence_text(evidence: dict[str, Any]) -> str:
    """The Tester's run as the next model reads it: the command's output is outside text,
    so it goes through the one channel as untrusted data (cut first, so the wrapper stays
    whole)."""
    if not evidence.get("ran"):
        return f"The Tester ran no tests. {evidence.get('summary', '')}".strip()
    output = model_data(
        str(evidence.get("output", ""))[: MAX_REQUEST_CHARS // 4], source="the Tester's test run"
    )
    return (
        f"{evidence.get('command', '')}: {evidence.get('status', '')}\n"
        f"{output}\n{evidence.get('summary', '')}"
    ).strip()


# Reusing an earlier run's completed plan or explore stage (seed 002).

REUSABLE = (StagePurpose.PLAN, StagePurpose.EXPLORE)
LOOK_BACK = 10  # the newest earlier stages of the purpose compared


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def plan_shape(plan: list[dict[str, Any]]) -> str:
    """The plan's shape: each step's title and files, in order."""
    return _digest([[step.get("title", ""), list(step.get("files", []))] for step in plan])


def workspace_base(session: AgentSession) -> str:
    """What the session's work starts from now: its last delivered commit, else its base."""
    last = DeliveredCommit.objects.filter(session=session).order_by("-pk").first()
    return f"commit {last.pk} {last.sha}" if last is not None else f"base {session.base_commit}"


def stage_basis(run: Run, session: AgentSession, role_id: int) -> dict[str, str]:
    """What a plan or explore stage's work rests on (the module's list)."""
    return {
        "request": _digest(run.request.strip()),
        "role": registry.by_id(role_id).content_hash,
        "workspace": workspace_base(session),
        "pending": pending_digest(session),
        "plan": plan_shape(session.plan or []),
    }


def reusable_stage(
    run: Run, session: AgentSession, template_stage: WorkflowStage
) -> RunStage | None:
    """An earlier run's completed stage this one may reuse, or None."""
    if template_stage.purpose not in REUSABLE or not session.plan:
        return None
    assert template_stage.role_id is not None
    basis = stage_basis(run, session, template_stage.role_id)
    earlier = (
        RunStage.objects.filter(
            run__session=session,
            purpose=template_stage.purpose,
            role_id=template_stage.role_id,
            status=StageStatus.SUCCEEDED,
        )
        .exclude(run=run)
        .select_related("run")
        .order_by("-run__created_at", "-seq")[:LOOK_BACK]
    )
    return next((stage for stage in earlier if stage.evidence.get("basis") == basis), None)


def reuse_reason(earlier: RunStage) -> str:
    """What a reused stage says on the run."""
    what = "plan" if earlier.purpose == StagePurpose.PLAN else "Explorer's findings"
    return (
        f"Reused the {what} of run {str(earlier.run_id)[:8]} (stage {earlier.seq}): the same "
        "request, role version, workspace and plan"
    )
