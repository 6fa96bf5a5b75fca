"""Shapes of orchestrated runs and their events (workflow templates: ``workflows``)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from acode.inputs import CommaSeparated, Input, PageQuery, Query, Text
from roles.registry import registry
from sessions_app.apis.serializers.deliveries import DeliveredCommitOutput
from sessions_app.apis.serializers.enums import enum_field
from sessions_app.models import (
    ApprovalStatus,
    RiskTier,
    Run,
    RunQuestion,
    RunStage,
    RunStatus,
    StagePurpose,
    StageStatus,
)
from sessions_app.permissions import SessionAction, may_take
from sessions_app.selectors.jobs import job_id_in_flight
from sessions_app.selectors.runs import (
    run_commit,
    run_current_stage,
    run_open_question,
    run_pending_approval,
    run_usage,
)

# Text limits (the run services refuse longer text too).
REQUEST_MAX_CHARS = 20_000
ANSWER_MAX_CHARS = 20_000
REASON_MAX_CHARS = 4_000
DIGEST_MAX_CHARS = 64
SLUG_MAX_CHARS = 64

NULLABLE_TEXT = serializers.CharField(allow_null=True)


RunStatusField = enum_field(RunStatus, "RunStatusEnum")
StageStatusField = enum_field(StageStatus, "RunStageStatusEnum")
ApprovalStatusField = enum_field(ApprovalStatus, "RunApprovalStatusEnum")
StagePurposeField = enum_field(StagePurpose, "StagePurposeEnum")
RiskTierField = enum_field(RiskTier, "RunRiskTierEnum")


def _role_slug(role_id: int | None) -> str | None:
    return registry.by_id(role_id).slug if role_id is not None else None


def _role_name(role_id: int | None) -> str | None:
    return registry.by_id(role_id).name if role_id is not None else None


def _username(user: Any) -> str | None:
    return user.get_username() if user is not None else None


# -- runs ---------------------------------------------------------------------------------


class RunStageRefOutput(serializers.Serializer):
    """Where a run is: its latest stage."""

    seq = serializers.IntegerField()
    purpose = StagePurposeField()
    role = serializers.SerializerMethodField(help_text="Role slug; null for the approval gate.")
    role_name = serializers.SerializerMethodField()
    plan_step = serializers.IntegerField(help_text="0: not tied to a plan step.")
    revision = serializers.IntegerField()
    status = StageStatusField()
    reason = serializers.CharField()

    @extend_schema_field(NULLABLE_TEXT)
    def get_role(self, obj: RunStage) -> str | None:
        return _role_slug(obj.role_id)

    @extend_schema_field(NULLABLE_TEXT)
    def get_role_name(self, obj: RunStage) -> str | None:
        return _role_name(obj.role_id)


class RunStageOutput(RunStageRefOutput):
    position = serializers.IntegerField(help_text="The template stage it executes.")
    model = serializers.CharField(
        help_text="The model endpoint the run routed the stage to (a Coder reassigned after a "
        "blocked step, a reviewer other than the author); empty: the stage's or its role's."
    )
    job = serializers.UUIDField(source="job_id", allow_null=True)
    verdict = serializers.JSONField(
        help_text="A review's {verdict, summary, findings: [{path, line, body}]}; {} otherwise."
    )
    evidence = serializers.JSONField(
        help_text="What the stage produced: the plan's size, complexity, risks and each "
        "step's acceptance criteria (criteria), findings, changed files, tests; basis: what a "
        "plan or explore stage rested on; reused_from: {run, seq} of a reused stage."
    )
    reasoning_effort = serializers.CharField(
        help_text="The role's reasoning effort its jobs were sent (empty: none sent)."
    )
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class RiskSignalHitOutput(serializers.Serializer):
    signal = serializers.CharField()
    tier = RiskTierField(help_text="The run's tier is at least this.")
    score = serializers.IntegerField(default=0, help_text="Points it adds to the run's score.")
    sensitive = serializers.BooleanField(
        default=False, help_text="A sensitive tag or path: approval is required from medium."
    )
    why = serializers.CharField()
    where = serializers.CharField(help_text="request, plan, or the changes of a plan step")


class RunBudgetOutput(serializers.Serializer):
    max_llm_calls = serializers.IntegerField()
    max_tokens = serializers.IntegerField()
    max_seconds = serializers.IntegerField()
    used_llm_calls = serializers.IntegerField()
    used_tokens = serializers.IntegerField()
    elapsed_seconds = serializers.IntegerField()


class RunQuestionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    asked_by = serializers.CharField(help_text="The role that asked, or 'orchestrator'.")
    question = serializers.CharField()
    answer = serializers.CharField()
    answered_by = serializers.SerializerMethodField()
    asked_at = serializers.DateTimeField()
    answered_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field(NULLABLE_TEXT)
    def get_answered_by(self, obj: RunQuestion) -> str | None:
        return _username(obj.answered_by)


class OpenQuestionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    question = serializers.CharField()
    asked_by = serializers.CharField()
    asked_at = serializers.DateTimeField()


class RunApprovalOutput(serializers.Serializer):
    id = serializers.IntegerField()
    digest = serializers.CharField()
    status = ApprovalStatusField()
    requested_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    decided_by = serializers.SerializerMethodField()
    decided_at = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField()

    @extend_schema_field(NULLABLE_TEXT)
    def get_decided_by(self, obj: Any) -> str | None:
        return _username(obj.decided_by)


class PendingApprovalOutput(serializers.Serializer):
    digest = serializers.CharField(help_text="Send exactly this to approve.")
    expires_at = serializers.DateTimeField()


class RunChangeOutput(serializers.Serializer):
    path = serializers.CharField()
    kind = serializers.CharField()
    diff = serializers.CharField()


class RunSummaryOutput(serializers.Serializer):
    id = serializers.UUIDField()
    session = serializers.UUIDField(source="session_id")
    template = serializers.CharField(source="template.slug")
    request = serializers.CharField()
    status = RunStatusField()
    declared_tier = RiskTierField()
    effective_tier = RiskTierField()
    current_stage = serializers.SerializerMethodField()
    message = serializers.CharField(help_text="How the run ended, or why it waits.")
    error_code = serializers.CharField(help_text="The ACODE code a failed run ended with.")
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field(RunStageRefOutput(allow_null=True))
    def get_current_stage(self, obj: Run) -> dict[str, Any] | None:
        stage = run_current_stage(obj)
        return dict(RunStageRefOutput(stage).data) if stage is not None else None


class RunWaitingOutput(serializers.Serializer):
    """What the current stage's job waits on now (issue 34: waiting is visible)."""

    what = serializers.ChoiceField(
        choices=["model", "tool", "worker", "broker", "step"],
        help_text="model: a model call in flight; tool: a tool call; worker: queued, no "
        "worker took it yet; broker: the worker cannot reach Redis; step: between calls.",
    )
    text = serializers.CharField(help_text="What it waits on, in words.")
    since = serializers.DateTimeField()
    seconds = serializers.IntegerField(help_text="How long it has waited so far.")
    llm_calls = serializers.IntegerField(help_text="The stage job's model calls so far.")
    tool_calls = serializers.IntegerField(help_text="The stage job's tool calls so far.")


class RunDetailOutput(RunSummaryOutput):
    """A run with its stages, questions and approvals, and what the caller may do with it
    (``context["user"]``)."""

    signals = RiskSignalHitOutput(many=True)
    risk_score = serializers.IntegerField(
        help_text="The declared tier's points (low 0, medium 3, high 6) plus each fired "
        "signal's score once; 3 or more is medium, 6 or more high."
    )
    gate_required = serializers.BooleanField()
    revisions = serializers.IntegerField()
    budget = serializers.SerializerMethodField()
    stages = RunStageOutput(many=True)
    questions = RunQuestionOutput(many=True)
    open_question = serializers.SerializerMethodField()
    approvals = RunApprovalOutput(many=True)
    pending_approval = serializers.SerializerMethodField()
    pending_changes = serializers.SerializerMethodField()
    commit = serializers.SerializerMethodField()
    can_answer = serializers.SerializerMethodField()
    can_approve = serializers.SerializerMethodField()
    can_cancel = serializers.SerializerMethodField()
    waiting = serializers.SerializerMethodField()

    @extend_schema_field(RunWaitingOutput(allow_null=True))
    def get_waiting(self, obj: Run) -> dict[str, Any] | None:
        """What a running run's current stage waits on (None: nothing in flight)."""
        stage = run_current_stage(obj) if obj.status == RunStatus.RUNNING else None
        found = job_id_in_flight(stage.job_id) if stage and stage.job_id else None
        if found is None:
            return None
        seconds = max(0, int((timezone.now() - found.since).total_seconds()))
        data = asdict(found)
        return {**data, "text": data.pop("label"), "seconds": seconds}

    @extend_schema_field(RunBudgetOutput)
    def get_budget(self, obj: Run) -> dict[str, int]:
        return {
            "max_llm_calls": obj.max_llm_calls,
            "max_tokens": obj.max_tokens,
            "max_seconds": obj.max_seconds,
            **run_usage(obj),
        }

    @extend_schema_field(OpenQuestionOutput(allow_null=True))
    def get_open_question(self, obj: Run) -> dict[str, Any] | None:
        question = run_open_question(obj)
        return dict(OpenQuestionOutput(question).data) if question is not None else None

    @extend_schema_field(PendingApprovalOutput(allow_null=True))
    def get_pending_approval(self, obj: Run) -> dict[str, Any] | None:
        approval = run_pending_approval(obj)
        return dict(PendingApprovalOutput(approval).data) if approval is not None else None

    @extend_schema_field(RunChangeOutput(many=True))
    def get_pending_changes(self, obj: Run) -> list[dict[str, str]]:
        rows = obj.session.pending_changes.order_by("path").values_list("path", "kind", "diff")
        return [{"path": path, "kind": kind, "diff": diff} for path, kind, diff in rows]

    @extend_schema_field(DeliveredCommitOutput(allow_null=True))
    def get_commit(self, obj: Run) -> dict[str, Any] | None:
        """The commit the run delivered (on approval, or when its review approved)."""
        commit = run_commit(obj)
        return dict(DeliveredCommitOutput(commit).data) if commit is not None else None

    # What the caller may do now, as the one decision says (``permissions.may_take``).
    @extend_schema_field(serializers.BooleanField())
    def get_can_answer(self, obj: Run) -> bool:
        return may_take(self.context["user"], SessionAction.RUN_ANSWER, obj)

    @extend_schema_field(serializers.BooleanField())
    def get_can_approve(self, obj: Run) -> bool:
        return may_take(self.context["user"], SessionAction.RUN_APPROVE, obj)

    @extend_schema_field(serializers.BooleanField())
    def get_can_cancel(self, obj: Run) -> bool:
        return may_take(self.context["user"], SessionAction.RUN_CANCEL, obj)


class RunPageOutput(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = RunSummaryOutput(many=True)


class RunEventOutput(serializers.Serializer):
    n = serializers.IntegerField(help_text="Position in the run's events, from 1.")
    at = serializers.DateTimeField()
    kind = serializers.CharField(
        help_text="run (stage started, paused, ended), decision (answered, approved, "
        "rejected, cancel requested, refusals) or job.<kind> (the events of its jobs)."
    )
    data = serializers.JSONField()  # type: ignore[assignment]


class RunEventsOutput(serializers.Serializer):
    events = RunEventOutput(many=True)
    next = serializers.IntegerField(help_text="Pass as ?after= to get only newer events.")


class RunStartInput(Input):
    request = Text(max_length=REQUEST_MAX_CHARS)
    risk = RiskTierField(
        required=False,
        help_text="The tier you declare (default low); risk signals may raise it.",
    )
    template = serializers.SlugField(
        max_length=SLUG_MAX_CHARS,
        required=False,
        help_text="A workflow template's slug (default: the one for the effective tier).",
    )


class RunAnswerInput(Input):
    answer = Text(max_length=ANSWER_MAX_CHARS)


class RunApproveInput(Input):
    digest = Text(
        max_length=DIGEST_MAX_CHARS,
        help_text="The pending approval's digest: what you reviewed and approve.",
    )
    reason = Text(max_length=REASON_MAX_CHARS, required=False, allow_blank=True, default="")


class RunRejectInput(Input):
    reason = Text(max_length=REASON_MAX_CHARS)


class RunListQuery(PageQuery):
    session = serializers.UUIDField(required=False, help_text="Only runs of this session (its id)")
    status = CommaSeparated(
        choices=RunStatus.values,
        required=False,
        help_text="Only runs in these statuses, e.g. running,awaiting_approval",
    )


class RunEventsQuery(Query):
    after = serializers.IntegerField(
        min_value=0,
        max_value=2**62,
        required=False,
        default=0,
        help_text="The last n seen: only newer events come",
    )
