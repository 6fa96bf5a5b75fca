"""What each stage of a run is asked: the request, the plan step, and what earlier
stages found (the plan, the Explorer's findings, the reviewer's findings, test results)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sessions_app.containment import model_data
from sessions_app.models import (
    AgentSession,
    Run,
    RunStage,
    StagePurpose,
    StageStatus,
)

MAX_REQUEST_CHARS = 20_000
PLAN_FORMAT = (
    'Answer with the plan only, as JSON: {"steps": [{"title": "...", "detail": "...", '
    '"files": ["path"], "depends_on": [1]}]}. Each step is one reviewable change.'
)


@dataclass
class PlanStep:
    """Where the run is in its plan."""

    number: int
    total: int
    title: str
    detail: str = ""
    files: list[str] = field(default_factory=list)


def plan_step_of(session: AgentSession, number: int) -> PlanStep:
    plan = session.plan or []
    step = next((s for s in plan if s["number"] == number), None) or {"title": f"step {number}"}
    return PlanStep(number, len(plan), step["title"], step.get("detail", ""), step.get("files", []))


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


def stage_request(run: Run, session: AgentSession, stage: RunStage, step: PlanStep) -> str:
    """The request a stage's job gets: the run's request, the step, and what earlier stages
    found (the plan, the Explorer's findings, the reviewer's findings, test results)."""
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
        parts = [f"Executing plan step {step.number}/{step.total}: {step.title}"]
        if step.detail:
            parts.append(step.detail)
        if step.files:
            parts.append("Files: " + ", ".join(step.files))
        parts.append(f"## The whole request\n{run.request}")
        explored = run.stages.filter(purpose=StagePurpose.EXPLORE, status=StageStatus.SUCCEEDED)
        for found in explored:
            parts.append(f"## Explorer's findings\n{found.evidence.get('findings', '')}")
        if stage.revision:
            review = (
                run.stages.filter(purpose=StagePurpose.REVIEW, plan_step=step.number)
                .order_by("-seq")
                .first()
            )
            if review is not None:
                parts.append("## Reviewer findings to address\n" + _findings_text(review.verdict))
            tested = (
                run.stages.filter(purpose=StagePurpose.TEST, plan_step=step.number)
                .order_by("-seq")
                .first()
            )
            if tested is not None:
                parts.append(f"## Last test results\n{_evidence_text(tested.evidence)}")
    elif stage.purpose == StagePurpose.TEST:
        parts = [
            f"Run the test suite for plan step {step.number}/{step.total}: {step.title}. "
            "Report whether the tests pass and what failed."
        ]
    elif stage.purpose == StagePurpose.REVIEW:
        parts = [
            f"Review the pending changes for plan step {step.number}/{step.total}: {step.title}.",
            "Call submit_review with verdict approve or request_changes, a summary, and "
            "findings (comments) with file path and line.",
        ]
        tested = (
            run.stages.filter(purpose=StagePurpose.TEST, plan_step=step.number)
            .order_by("-seq")
            .first()
        )
        if tested is not None:
            parts.append(f"## Test results (evidence)\n{_evidence_text(tested.evidence)}")
    answers = _answers_text(run)
    if answers:
        parts.append(f"## Answers from a person\n{answers}")
    return "\n\n".join(parts)[:MAX_REQUEST_CHARS]


def _evidence_text(evidence: dict[str, Any]) -> str:
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
