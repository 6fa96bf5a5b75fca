"""Quality metrics of runs (issue 39): first-time test pass rate, approvals without
revisions and scope creep, per role, model or template, for the sessions a user sees.

Computed from what runs record, one query whatever the volume (the stages' JSON keys, not
their whole evidence). The unit is a plan step of a run (a run and its ``plan_step``):

- **First-time test pass**: of the steps whose first Tester stage ended, those whose first
  Tester stage's test command passed (a Tester that ran no tests did not pass).
- **Approved without revisions**: of the steps a Reviewer gave a verdict on, those whose
  first verdict was approve (so no revision was ever requested); and the same of runs: runs
  with a verdict whose reviews, the final review of the whole change included (plan step
  0), never requested changes.
- **Scope creep**: of the files a run's Coder stages changed, those outside the files its
  plan names (a file named, or under a directory named with a trailing ``/``). A Coder
  stage records the pending changes after it (``changed``) and the plan's files
  (``planned``); a file counts once per run, for the Coder stage that first changed it.
  Runs whose plan names no file set no scope and are not measured.

A step is credited to its author: the role of its first Coder stage and the model that
answered that stage's job; scope creep to the Coder stage that changed the file.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from sessions_app.models import AgentSession, RunStage, StagePurpose, StageStatus

QUALITY_GROUPS = ("role", "model", "template")
PASSED = "passed"  # a Tester stage's evidence result (``services.runs.stages``)
ENDED = (StageStatus.SUCCEEDED, StageStatus.FAILED)
VERDICTS = ("approve", "request_changes")

_FIELDS = (
    "run_id", "seq", "purpose", "plan_step", "status", "role__slug", "role__name",
    "job__model", "run__template__slug", "run__template__name",
    "evidence__result", "evidence__changed", "evidence__planned", "verdict__verdict",
)  # fmt: skip


@dataclass
class Ratio:
    """``count`` of ``of``; the rate is None when there is nothing to measure."""

    count: int = 0
    of: int = 0

    def add(self, hit: bool, n: int = 1) -> None:
        self.of += n
        self.count += n if hit else 0

    @property
    def rate(self) -> float | None:
        return round(self.count / self.of, 4) if self.of else None

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "of": self.of, "rate": self.rate}


@dataclass
class QualityRow:
    """One group's metrics (or all of them)."""

    key: str
    name: str
    first_time_pass: Ratio = field(default_factory=Ratio)
    approved_without_revisions: Ratio = field(default_factory=Ratio)
    scope_creep: Ratio = field(default_factory=Ratio)

    def add(self, other: QualityRow) -> None:
        for name in ("first_time_pass", "approved_without_revisions", "scope_creep"):
            mine, theirs = getattr(self, name), getattr(other, name)
            mine.count += theirs.count
            mine.of += theirs.of

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "first_time_pass": self.first_time_pass.as_dict(),
            "approved_without_revisions": self.approved_without_revisions.as_dict(),
            "scope_creep": self.scope_creep.as_dict(),
        }


@dataclass
class RunCounts:
    """The same of whole runs (approvals, scope creep)."""

    reviewed: int = 0
    approved_without_revisions: int = 0
    measured_for_creep: int = 0
    with_creep: int = 0


def _group(by: str, stage: dict[str, Any] | None, run: dict[str, Any]) -> tuple[str, str]:
    """(key, name) of the group a stage's work counts in; ("", "—") when unknown."""
    if by == "template":
        return str(run["run__template__slug"]), str(run["run__template__name"])
    if stage is None:
        return "", "—"
    if by == "role":
        return str(stage["role__slug"] or ""), str(stage["role__name"] or "—")
    model = str(stage["job__model"] or "")
    return model, model or "—"


def in_plan(path: str, planned: Iterable[str]) -> bool:
    """Whether a changed path is one the plan names, or lies under a directory it names."""
    clean = path.strip().removeprefix("./")
    for entry in planned:
        named = str(entry).strip().removeprefix("./")
        if clean == named or (named.endswith("/") and clean.startswith(named)):
            return True
    return False


def _steps(stages: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    steps: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for stage in stages:
        steps[stage["plan_step"]].append(stage)
    return steps


def _first(stages: list[dict[str, Any]], purpose: str) -> dict[str, Any] | None:
    return next((s for s in stages if s["purpose"] == purpose), None)


def _measure_run(
    by: str, stages: list[dict[str, Any]], groups: dict[str, QualityRow], runs: RunCounts
) -> None:
    """Add one run's steps (its stages in order) to ``groups`` and ``runs``."""
    run = stages[0]

    def row(stage: dict[str, Any] | None) -> QualityRow:
        key, name = _group(by, stage, run)
        return groups.setdefault(key, QualityRow(key, name))

    verdicts: list[str] = []
    for number, step in _steps(stages).items():
        said = [s["verdict__verdict"] for s in step if s["purpose"] == StagePurpose.REVIEW]
        said = [v for v in said if v in VERDICTS]
        verdicts += said
        if not number:  # the final review of the whole change: the run's, no step's
            continue
        author = _first(step, StagePurpose.CODE)
        test = _first(step, StagePurpose.TEST)
        if test is not None and test["status"] in ENDED:
            row(author).first_time_pass.add(test["evidence__result"] == PASSED)
        if said:
            row(author).approved_without_revisions.add(said[0] == "approve")
    if verdicts:
        runs.reviewed += 1
        runs.approved_without_revisions += "request_changes" not in verdicts
    _measure_creep(stages, row, runs)


def _measure_creep(stages: list[dict[str, Any]], row: Any, runs: RunCounts) -> None:
    coded = [s for s in stages if s["purpose"] == StagePurpose.CODE]
    planned = {str(f) for s in coded for f in s["evidence__planned"] or []}
    if not planned:
        return
    seen: set[str] = set()
    crept = False
    for stage in coded:
        changed = {str(p) for p in stage["evidence__changed"] or []}
        for path in sorted(changed - seen):
            outside = not in_plan(path, planned)
            row(stage).scope_creep.add(outside)
            crept = crept or outside
        seen |= changed
    runs.measured_for_creep += 1
    runs.with_creep += crept


def quality_metrics(
    sessions: QuerySet[AgentSession] | None = None, *, by: str, since: datetime | None = None
) -> dict[str, Any]:
    """The quality metrics of the runs in ``sessions`` (all by default) created since
    ``since``, per ``by`` (role, model or template), with a row for everything and the
    counts of whole runs; rows by name."""
    if by not in QUALITY_GROUPS:
        raise ValueError(f"quality is grouped by one of {', '.join(QUALITY_GROUPS)}, not {by!r}")
    stages = RunStage.objects.filter(
        purpose__in=(StagePurpose.CODE, StagePurpose.TEST, StagePurpose.REVIEW)
    )
    if sessions is not None:
        stages = stages.filter(run__session__in=sessions)
    if since is not None:
        stages = stages.filter(run__created_at__gte=since)
    groups: dict[str, QualityRow] = {}
    runs = RunCounts()
    current: list[dict[str, Any]] = []
    for stage in stages.order_by("run_id", "seq").values(*_FIELDS):
        if current and current[0]["run_id"] != stage["run_id"]:
            _measure_run(by, current, groups, runs)
            current = []
        current.append(stage)
    if current:
        _measure_run(by, current, groups, runs)
    rows = sorted(groups.values(), key=lambda g: (g.name.lower(), g.key))
    total = QualityRow("total", "All")
    for group in rows:
        total.add(group)
    return {
        "by": by,
        "rows": [g.as_dict() for g in rows],
        "total": total.as_dict(),
        "runs": asdict(runs),
    }
