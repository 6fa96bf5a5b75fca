"""What the run panel shows: a run as plain values (its pipeline, stages, questions,
approvals, risk and budget), and the panel with the buttons the viewer may press."""

from __future__ import annotations

from dataclasses import dataclass, field

from sessions_app.dashboard.deliveries import DeliveredView
from sessions_app.dashboard.formatting import RoleBadge, Stamp, WaitingView
from sessions_app.models import ApprovalStatus, RiskTier, RunStatus, StagePurpose, StageStatus

RUN_LABELS = dict(RunStatus.choices)
STAGE_LABELS = dict(StageStatus.choices)
APPROVAL_LABELS = dict(ApprovalStatus.choices)
PURPOSE_NAMES: dict[str, str] = {
    StagePurpose.PLAN: "Plan",
    StagePurpose.EXPLORE: "Explore",
    StagePurpose.CODE: "Code",
    StagePurpose.TEST: "Test",
    StagePurpose.REVIEW: "Review",
    StagePurpose.APPROVAL: "Approval",
}
# Code, test and review repeat per plan step and per revision: the pipeline draws them as
# one loop.
LOOP_PURPOSES = frozenset({StagePurpose.CODE, StagePurpose.TEST, StagePurpose.REVIEW})
VERDICT_LABELS = {"approve": "Approved", "request_changes": "Changes requested"}
RISK_CHOICES = [(value, label) for value, label in RiskTier.choices]


@dataclass(frozen=True)
class Finding:
    path: str
    line: int | None
    body: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.path and self.line else self.path


@dataclass(frozen=True)
class VerdictView:
    verdict: str
    label: str
    summary: str
    findings: list[Finding]


@dataclass(frozen=True)
class EvidenceView:
    ran: bool
    status: str
    command: str
    output: str
    summary: str
    findings: str  # an Explorer's findings


@dataclass(frozen=True)
class PlanView:
    """What a plan stage produced: the plan's size, complexity, risks and each step's
    acceptance criteria."""

    steps: int
    complexity: str
    risks: list[str]
    criteria: list[tuple[int, str, list[str]]]  # (step, title, acceptance criteria)


@dataclass(frozen=True)
class StageView:
    seq: int
    purpose: str
    purpose_name: str
    role: RoleBadge | None
    reason: str
    plan_step: int
    revision: int
    status: str
    status_label: str
    current: bool
    job_id: str
    job_short: str
    verdict: VerdictView | None
    evidence: EvidenceView | None
    started: Stamp
    took: str
    waited: str = ""  # time the stage waited for an answer, not counted in ``took``
    since: Stamp | None = None  # a current stage's start, so ``took`` ticks in the browser
    plan: PlanView | None = None
    reasoning_effort: str = ""  # the role's, as its jobs were sent
    reused: bool = False  # an earlier run's plan or findings, reused (its reason says whose)


@dataclass(frozen=True)
class PipelineNode:
    position: int
    purpose: str
    name: str
    role: RoleBadge | None
    state: str  # pending, current, done, failed
    times: int  # how often the stage ran (a revision runs code, test and review again)


@dataclass(frozen=True)
class PipelineGroup:
    loop: bool
    nodes: list[PipelineNode]


@dataclass(frozen=True)
class QuestionView:
    id: int
    asked_by: str
    question: str
    answer: str
    answered_by: str
    asked: Stamp
    answered: Stamp | None


@dataclass(frozen=True)
class ApprovalView:
    id: int
    digest: str
    short: str
    status: str
    status_label: str
    requested: Stamp
    expires: Stamp
    decided_by: str
    reason: str


@dataclass(frozen=True)
class SignalView:
    signal: str
    tier: str
    why: str
    where: str
    score: int = 0
    sensitive: bool = False


@dataclass(frozen=True)
class BudgetLine:
    label: str
    used: str
    limit: str
    percent: int
    since: Stamp | None = None  # an active run's start: its time ticks in the browser


@dataclass(frozen=True)
class RunSummary:
    id: str
    short_id: str
    request: str
    status: str
    status_label: str
    created: Stamp


@dataclass(frozen=True)
class RunView:
    id: str
    short_id: str
    request: str
    template: str
    status: str
    status_label: str
    active: bool
    message: str
    error_code: str
    declared_tier: str
    effective_tier: str
    signals: list[SignalView]
    gate_required: bool
    revisions: int
    created_by: str
    created: Stamp
    finished: Stamp | None
    pipeline: list[PipelineGroup]
    stages: list[StageView]
    current: StageView | None
    open_question: QuestionView | None
    answered: list[QuestionView]
    pending_approval: ApprovalView | None
    decided_approvals: list[ApprovalView]
    budget: list[BudgetLine]
    pending_changes: int
    commit: DeliveredView | None = None
    waiting: WaitingView | None = None  # what the current stage's job waits on now
    risk_score: int = 0


@dataclass(frozen=True)
class RunError:
    """A refusal shown in the panel, with its code; ``digest`` is the one now waiting for
    approval when the refusal was about a digest (ACODE-RUN-010/011)."""

    code: str
    message: str
    digest: str = ""


@dataclass
class RunPanel:
    session_id: str
    run: RunView | None
    earlier: list[RunSummary] = field(default_factory=list)
    can_start: bool = False
    can_answer: bool = False
    can_decide: bool = False
    can_cancel: bool = False
    error: RunError | None = None
    risks: list[tuple[str, str]] = field(default_factory=lambda: RISK_CHOICES)
    prefill: str = ""  # what the Run form starts with


def run_end_text(status: str, code: str, message: str) -> str:
    """``failed: ACODE-JOB-009 The Coder changed nothing.`` for a run that ended without
    succeeding ("" otherwise): a board card's badges alone read "Job: Succeeded / Run:
    Failed" with nothing saying why (issue 34)."""
    if status not in ("failed", "rejected", "cancelled"):
        return ""
    why = " ".join(part for part in (code, message) if part)
    return f"{RUN_LABELS.get(status, status).lower()}: {why}" if why else ""
