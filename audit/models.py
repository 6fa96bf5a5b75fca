"""The tamper-evident audit log.

The tables keep the names they had when the sessions app owned them (``db_table``). A
session's chain ends on the session's own row (``AgentSession.audit_seq``), which only the
sessions app writes; ``AuditEvent.session`` names that model by its label, so this app
imports no other.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Upper

from audit.appendonly import AppendOnlyModel


class AuditEventType(models.TextChoices):
    """The documented list of audit event types."""

    SESSION_CREATED = "SessionCreated", "Session created"
    SESSION_UPDATED = "SessionUpdated", "Session details changed"
    ROLE_TRANSITION = "RoleTransition", "Role changed"
    TRANSITION_DENIED = "TransitionDenied", "Role change refused"
    TOOL_DECISION = "ToolDecision", "Tool call allowed, recorded before it runs"
    ROLE_ACTION = "RoleAction", "Tool call executed in a role"
    TOOL_DENIED = "ToolDenied", "Tool call refused in a role"
    TOOL_CONSENT = "ToolConsent", "Tool call put to a person: asked, answered or timed out"
    PLAN_UPDATED = "PlanUpdated", "Plan set or a step's status changed"
    CHANGE_RECORDED = "ChangeRecorded", "Pending file change recorded"
    CHANGES_APPROVED = "ChangesApproved", "Pending changes approved and cleared"
    ROLE_EDITED = "RoleEdited", "Role definition changed (new role version)"
    ROLE_DATA_CHANGED = "RoleDataChanged", "Role, rule, tool, permission or prompt saved or deleted"
    PROMPT_REJECTED = "PromptRejected", "Dangerous prompt text refused"
    JOB_EVENT = "JobEvent", "Inference job lifecycle"
    RUN_EVENT = "RunEvent", "Orchestrated run started, moved to a stage, paused or ended"
    RUN_DECISION = "RunDecision", "A person answered, approved, rejected or cancelled a run"
    BRANCH_PUSHED = "BranchPushed", "Approved work pushed to the repository's remote, or refused"
    SECRET_RULE_CHANGED = "SecretRuleChanged", "A team's secret rule added, changed or removed"
    HOOK_EVENT = "HookEvent", "An outside agent's hook event (session start or end, prompt, other)"
    BACKLOG_EVENT = "BacklogEvent", "A backlog task proposed, accepted, started, moved or merged"


GLOBAL_CHAIN = "global"
SESSION_CHAIN_PREFIX = "session:"


def chain_key(session_id: object | None) -> str:
    """The chain an event belongs to: its session's, or the one for events without one."""
    return f"{SESSION_CHAIN_PREFIX}{session_id}" if session_id else GLOBAL_CHAIN


class AuditEvent(AppendOnlyModel):
    """One audited fact, linked by ``hash`` to the event before it in the same chain.

    Each session has its own chain (and events without a session share one), so writers
    to different sessions never wait for each other; ``AuditAnchor`` rows seal every
    chain's head from time to time. ``id`` gives the global order.
    """

    chain = models.CharField(max_length=64)
    seq = models.PositiveBigIntegerField(help_text="Position in its chain, from 1.")
    event_type = models.CharField(max_length=40, choices=AuditEventType.choices)
    session = models.ForeignKey(
        "sessions_app.AgentSession",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="audit_events",
        db_index=False,  # (session, id) below serves it
    )
    role = models.CharField(max_length=64, blank=True)
    actor = models.CharField(max_length=150)
    target = models.CharField(max_length=1000, blank=True)
    result = models.CharField(max_length=200, blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(db_index=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    class Meta:
        db_table = "sessions_app_auditevent"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["chain", "seq"], name="unique_audit_chain_seq")
        ]
        # The log is read as "the rows matching a filter, newest first" (the page, the
        # API's cursor, the export). Each filter's index ends in id, so a page comes
        # straight off the index at any volume, not from a walk back through the whole log.
        indexes = [
            models.Index(fields=["session", "id"], name="audit_session_id_idx"),
            models.Index(fields=["event_type", "id"], name="audit_type_id_idx"),
            models.Index(fields=["actor", "id"], name="audit_actor_id_idx"),
            # The role filter ignores case: UPPER(role) = UPPER(%s).
            models.Index(Upper("role"), "id", name="audit_role_upper_id_idx"),
            # Time filters: newest first with the window checked inside the index
            # (sessions_app.filters.audit_order).
            models.Index(fields=["id", "created_at"], name="audit_id_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.chain} #{self.seq} {self.event_type} {self.target}"


class AuditChain(models.Model):
    """The end of the chain of events without a session; writers to it lock it while they
    append. A session's chain ends on the session's own row (``AgentSession.audit_seq``)."""

    key = models.CharField(max_length=64, primary_key=True)
    last_seq = models.PositiveBigIntegerField(default=0)
    last_hash = models.CharField(max_length=64, default="0" * 64)
    anchored_seq = models.PositiveBigIntegerField(
        default=0, help_text="The last event of this chain an anchor has sealed."
    )

    class Meta:
        db_table = "sessions_app_auditchain"

    def __str__(self) -> str:
        return f"{self.key} #{self.last_seq}"


class AuditAnchor(AppendOnlyModel):
    """A periodic seal over every chain's head, itself chained to the anchor before it.

    Deleting the newest events of a chain and rewinding its head is caught by the first
    anchor taken after those events were written.
    """

    seq = models.PositiveBigIntegerField(unique=True)
    heads = models.JSONField(help_text="{chain: [last seq, last hash]} when the anchor was taken.")
    created_at = models.DateTimeField()
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    class Meta:
        db_table = "sessions_app_auditanchor"
        ordering = ["seq"]

    def __str__(self) -> str:
        return f"anchor #{self.seq}"


class AuditVerification(models.Model):
    """One run of the whole-log verification: what the audit page shows as the chain status."""

    ok = models.BooleanField()
    checked = models.PositiveBigIntegerField()
    chain = models.CharField(max_length=64, blank=True)
    first_bad_seq = models.PositiveBigIntegerField(null=True, blank=True)
    first_bad_id = models.PositiveBigIntegerField(null=True, blank=True)
    problem = models.TextField(blank=True)
    actor = models.CharField(max_length=150)
    verified_at = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "sessions_app_auditverification"
        ordering = ["-verified_at"]

    def __str__(self) -> str:
        return f"{'intact' if self.ok else 'broken'} at {self.verified_at:%Y-%m-%d %H:%M}"
