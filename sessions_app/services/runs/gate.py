"""The approval gate: what an approval is bound to (a digest) and asking for one."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

from django.utils import timezone

from roles.registry import registry
from sessions_app.agent.safefs import Refused, WorkspaceFS
from sessions_app.models import (
    AgentSession,
    ApprovalStatus,
    Run,
    RunApproval,
    RunStatus,
)
from sessions_app.services.runs.common import run_pause

DIGEST_READ_CAP = 64 << 20


def approval_digest(run: Run, session: AgentSession) -> str:
    """What an approval is bound to: the run, its pending changes as they are in the
    workspace now, and the versions of the roles its stages ran in."""
    changes = []
    with WorkspaceFS(session.workspace) as fs:
        for path, kind, diff in session.pending_changes.order_by("path").values_list(
            "path", "kind", "diff"
        ):
            try:
                content = hashlib.sha256(fs.read_bytes(path, DIGEST_READ_CAP)).hexdigest()
            except (OSError, Refused):
                content = "absent"
            changes.append([path, kind, diff, content])
    versions = sorted(
        {
            (registry.by_id(role_id).slug, registry.by_id(role_id).content_hash)
            for role_id in run.stages.exclude(role=None).values_list("role_id", flat=True)
        }
    )
    payload = {"run": str(run.pk), "changes": changes, "roles": versions}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def gate_open(run: Run, session: AgentSession) -> RunApproval:
    """Ask for approval of exactly what is pending now (superseding any earlier request)."""
    run.approvals.filter(status=ApprovalStatus.PENDING).update(status=ApprovalStatus.SUPERSEDED)
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
