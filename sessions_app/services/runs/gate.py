"""The approval gate: whether a run needs one, what an approval is bound to (a digest),
reaching it and asking for one."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

from django.utils import timezone

from roles.registry import registry
from sessions_app.models import (
    AgentSession,
    ApprovalStatus,
    RiskTier,
    Run,
    RunApproval,
    RunStage,
    RunStatus,
    StagePurpose,
    StageStatus,
    WorkflowTemplate,
)
from sessions_app.models.states import status_move_where
from sessions_app.services.changes import pending_digest
from sessions_app.services.runs.common import run_pause


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


def gate_required_for(tier: str, template: WorkflowTemplate) -> bool:
    """Is an approval gate required: the run's template has one, or the template for its
    effective tier does (high risk always)."""
    if template.stages.filter(purpose=StagePurpose.APPROVAL).exists():
        return True
    tiered = WorkflowTemplate.objects.filter(risk_tier=tier, enabled=True).order_by("name").first()
    return tier == RiskTier.HIGH or bool(
        tiered and tiered.stages.filter(purpose=StagePurpose.APPROVAL).exists()
    )


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
