"""Sessions, their history, pending changes, jobs and runs (one module each).

The audit log's rows are the ``audit`` app's (below this one); their names are handed on
here for the session code that names them beside the session's own.
"""

from __future__ import annotations

from audit.appendonly import AppendOnlyError, AppendOnlyModel, AppendOnlyQuerySet
from audit.models import (
    GLOBAL_CHAIN,
    AuditAnchor,
    AuditChain,
    AuditEvent,
    AuditEventType,
    AuditVerification,
    chain_key,
)
from sessions_app.models.backlog import (
    PRIORITY_RANK,
    BacklogProject,
    BacklogTask,
    Epic,
    PmWork,
    TaskPriority,
    TaskStatus,
)
from sessions_app.models.consents import ConsentStatus, RememberedAnswer, ToolConsent
from sessions_app.models.deliveries import DeliveredCommit, PushStatus
from sessions_app.models.jobs import (
    FINAL_JOB_STATUSES,
    Job,
    JobEvent,
    JobEventKind,
    JobStatus,
)
from sessions_app.models.outside import AgentKind, HookToken, OutsideSession
from sessions_app.models.repositories import Repository
from sessions_app.models.runs import (
    ACTIVE_RUN_STATUSES,
    FINAL_RUN_STATUSES,
    TIER_ORDER,
    ApprovalStatus,
    RiskSignal,
    Run,
    RunApproval,
    RunQuestion,
    RunStage,
    RunStatus,
    SignalKind,
    StagePurpose,
    StageStatus,
    WorkflowStage,
    WorkflowTemplate,
)
from sessions_app.models.secrets import SecretRule, SecretRuleKind
from sessions_app.models.sessions import (
    SETTABLE_STATUSES,
    AgentSession,
    ChangeKind,
    IdempotencyRecord,
    PendingChange,
    RiskTier,
    RoleTransition,
    SessionStatus,
    StepStatus,
    WorkspaceApply,
)

__all__ = [
    "ACTIVE_RUN_STATUSES",
    "FINAL_JOB_STATUSES",
    "FINAL_RUN_STATUSES",
    "GLOBAL_CHAIN",
    "PRIORITY_RANK",
    "SETTABLE_STATUSES",
    "TIER_ORDER",
    "AgentKind",
    "AgentSession",
    "AppendOnlyError",
    "AppendOnlyModel",
    "AppendOnlyQuerySet",
    "ApprovalStatus",
    "AuditAnchor",
    "AuditChain",
    "AuditEvent",
    "AuditEventType",
    "AuditVerification",
    "BacklogProject",
    "BacklogTask",
    "ChangeKind",
    "ConsentStatus",
    "DeliveredCommit",
    "Epic",
    "HookToken",
    "IdempotencyRecord",
    "Job",
    "JobEvent",
    "JobEventKind",
    "JobStatus",
    "OutsideSession",
    "PendingChange",
    "PmWork",
    "PushStatus",
    "RememberedAnswer",
    "Repository",
    "RiskSignal",
    "RiskTier",
    "RoleTransition",
    "Run",
    "RunApproval",
    "RunQuestion",
    "RunStage",
    "RunStatus",
    "SecretRule",
    "SecretRuleKind",
    "SessionStatus",
    "SignalKind",
    "StagePurpose",
    "StageStatus",
    "StepStatus",
    "TaskPriority",
    "TaskStatus",
    "ToolConsent",
    "WorkflowStage",
    "WorkflowTemplate",
    "WorkspaceApply",
    "chain_key",
]
