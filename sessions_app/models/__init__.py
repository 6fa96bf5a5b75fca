"""Sessions, their history, pending changes, the audit log and jobs (one module each)."""

from __future__ import annotations

from sessions_app.models.audit import (
    GLOBAL_CHAIN,
    AuditAnchor,
    AuditChain,
    AuditEvent,
    AuditEventType,
    AuditVerification,
    chain_key,
)
from sessions_app.models.base import AppendOnlyError, AppendOnlyModel, AppendOnlyQuerySet
from sessions_app.models.jobs import (
    FINAL_JOB_STATUSES,
    Job,
    JobEvent,
    JobEventKind,
    JobStatus,
)
from sessions_app.models.repositories import Repository
from sessions_app.models.sessions import (
    AgentSession,
    ChangeKind,
    IdempotencyRecord,
    PendingChange,
    RiskTier,
    RoleTransition,
    SessionStatus,
    StepStatus,
)

__all__ = [
    "FINAL_JOB_STATUSES",
    "GLOBAL_CHAIN",
    "AgentSession",
    "AppendOnlyError",
    "AppendOnlyModel",
    "AppendOnlyQuerySet",
    "AuditAnchor",
    "AuditChain",
    "AuditEvent",
    "AuditEventType",
    "AuditVerification",
    "ChangeKind",
    "IdempotencyRecord",
    "Job",
    "JobEvent",
    "JobEventKind",
    "JobStatus",
    "PendingChange",
    "Repository",
    "RiskTier",
    "RoleTransition",
    "SessionStatus",
    "StepStatus",
    "chain_key",
]
