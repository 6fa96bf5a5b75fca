"""Reusing a completed planner or explorer stage (seed 002: "stage reuse can skip
already-completed planner/explorer stages when plan shape and scope are unchanged").

A plan or explore stage a run is about to enter is reused, not run again, when an earlier
run of the same session completed a stage of the same purpose with the same basis:

- the same request (its text, stripped);
- the same role at the same version (its content hash: a changed prompt plans anew);
- the same scope: the workspace base (the session's last delivered commit, else the
  commit its branch started from) and exactly the same pending changes (their digest);
- the same plan shape: the session's plan now is the plan that stage left, step by step
  (each step's title and files, in order; step statuses do not count).

A closing plan or explore stage records its basis in its evidence (``stage_basis``); a
reused stage copies the earlier one's evidence and says which stage it reused, in its
reason and in ``evidence.reused_from``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from roles.registry import registry
from sessions_app.models import (
    AgentSession,
    DeliveredCommit,
    Run,
    RunStage,
    StagePurpose,
    StageStatus,
    WorkflowStage,
)
from sessions_app.services.changes import pending_digest

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
