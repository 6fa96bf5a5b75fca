"""Risk is decided by acode, not by the acting model: signals an admin edits, evaluated on
the request, the plan and the changes; the effective tier is the highest of them and the
tier declared by whoever started the run, and it says whether the run needs approval."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sessions_app.models import (
    TIER_ORDER,
    RiskSignal,
    RiskTier,
    Run,
    SignalKind,
    StagePurpose,
    WorkflowTemplate,
)

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


def higher_tier(*tiers: str) -> str:
    """The highest of the given tiers."""
    return max(tiers, key=lambda tier: TIER_ORDER[RiskTier(tier)])


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
    return ""


def risk_assess(data: RiskInput, *, where: str) -> list[dict[str, str]]:
    """Every enabled signal that fires on ``data``, recorded as ``{signal, tier, why, where}``."""
    return [
        {"signal": signal.name, "tier": signal.tier, "why": why, "where": where}
        for signal in RiskSignal.objects.filter(enabled=True)
        if (why := _fired(signal, data))
    ]


def gate_required_for(tier: str, template: WorkflowTemplate) -> bool:
    """Is an approval gate required: the run's template has one, or the template for its
    effective tier does (high risk always)."""
    if template.stages.filter(purpose=StagePurpose.APPROVAL).exists():
        return True
    tiered = WorkflowTemplate.objects.filter(risk_tier=tier, enabled=True).order_by("name").first()
    return tier == RiskTier.HIGH or bool(
        tiered and tiered.stages.filter(purpose=StagePurpose.APPROVAL).exists()
    )


def run_raise_risk(run: Run, fired: list[dict[str, str]]) -> None:
    """New risk signals raise the run's tier (and may require the approval gate)."""
    known = {(s["signal"], s["where"]) for s in run.signals}
    new = [s for s in fired if (s["signal"], s["where"]) not in known]
    if not new:
        return
    run.signals = [*run.signals, *new]
    run.effective_tier = higher_tier(run.effective_tier, *(s["tier"] for s in new))
    run.gate_required = run.gate_required or gate_required_for(run.effective_tier, run.template)
    run.save(update_fields=["signals", "effective_tier", "gate_required", "updated_at"])
