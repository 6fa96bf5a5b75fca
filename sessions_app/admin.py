"""Admin: sessions are read-mostly (the role changes only through a transition); history is read-only.

Workflow templates and risk signals are edited here; runs are read-only (people act on them
through the API, the dashboard or the CLI)."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest

from sessions_app.models import (
    SETTABLE_STATUSES,
    AgentSession,
    AuditEvent,
    DeliveredCommit,
    PendingChange,
    Repository,
    RiskSignal,
    RoleTransition,
    Run,
    RunApproval,
    RunQuestion,
    RunStage,
    SecretRule,
    WorkflowStage,
    WorkflowTemplate,
)
from sessions_app.permissions import (
    SessionAction,
    action_refusal,
    audit_visible_to,
    runs_visible_to,
    sessions_visible_to,
)
from sessions_app.services.runs.portability import stage_commands_problems, stage_order_problems
from sessions_app.services.secrets import secret_rule_delete, secret_rule_save
from sessions_app.services.sessions import session_update
from sessions_app.services.workspaces import masked_remote


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class TransitionInline(admin.TabularInline):
    model = RoleTransition
    extra = 0
    fields = ("seq", "from_role", "to_role", "role_version", "reason", "actor", "created_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class AgentSessionForm(forms.ModelForm):
    """Refuses, as a form error, what the one decision refuses (a run executing in the
    session, someone who may not act on it); ``session_update`` asks it again, locked."""

    acting_user: Any = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "status" in self.fields:  # archived only by archiving (it frees the files)
            cast(forms.ChoiceField, self.fields["status"]).choices = SETTABLE_STATUSES

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        refusal = action_refusal(
            SessionAction.SESSION_UPDATE, session=self.instance, user=self.acting_user
        )
        if refusal is not None:
            raise ValidationError(f"{refusal.code}: {refusal.message}", code=refusal.code)
        return cleaned


@admin.register(AgentSession)
class AgentSessionAdmin(admin.ModelAdmin):
    form = AgentSessionForm
    list_display = (
        "title",
        "owner",
        "current_role",
        "role_since",
        "status",
        "risk_tier",
        "created_at",
    )
    list_filter = ("current_role", "status", "risk_tier")
    search_fields = ("title", "task", "last_reason", "owner__username")
    readonly_fields = (
        "id",
        "owner",
        "workspace",
        "workspace_managed",
        "current_role",
        "role_version",
        "role_since",
        "last_reason",
        "plan",
        "created_at",
        "updated_at",
    )
    fields = ("id", "title", "task", "status", "risk_tier", *readonly_fields[1:])
    inlines = [TransitionInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[AgentSession]:
        return sessions_visible_to(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # sessions are opened through the API, dashboard or CLI

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # their history is append-only; archive instead (API, page, CLI)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = cast(type[AgentSessionForm], super().get_form(request, obj, change, **kwargs))
        form.acting_user = request.user  # a class made for this request
        return form

    def save_model(self, request: HttpRequest, obj: AgentSession, form: Any, change: bool) -> None:
        data = {
            k: form.cleaned_data[k]
            for k in ("title", "task", "status", "risk_tier")
            if k in form.changed_data
        }
        original = AgentSession.objects.get(pk=obj.pk)
        session_update(session=original, data=data, user=request.user)  # type: ignore[arg-type]


@admin.register(RoleTransition)
class RoleTransitionAdmin(_ReadOnly):
    list_display = ("session", "seq", "from_role", "to_role", "actor", "reason", "created_at")
    list_filter = ("to_role", "from_role")
    search_fields = ("reason", "actor", "session__title")


@admin.register(AuditEvent)
class AuditEventAdmin(_ReadOnly):
    list_display = ("id", "chain", "seq", "created_at", "event_type", "role", "actor", "target")

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditEvent]:
        return audit_visible_to(request.user)

    list_filter = ("event_type", "role")
    search_fields = ("actor", "target", "result")
    date_hierarchy = "created_at"


@admin.register(PendingChange)
class PendingChangeAdmin(_ReadOnly):
    list_display = ("session", "path", "kind", "updated_at")
    list_filter = ("kind",)


class RepositoryForm(forms.ModelForm):
    """The source is shown with the credentials of its URL masked; sent back still masked,
    the stored credentials are kept (type the URL again to change them)."""

    class Meta:
        model = Repository
        fields = ["name", "description", "source", "default_branch", "pushable", "users", "groups"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["source"] = masked_remote(self.instance.source)

    def clean_source(self) -> str:
        value = str(self.cleaned_data["source"])
        if self.instance.pk and value == masked_remote(self.instance.source):
            return self.instance.source
        return value


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    """Repositories sessions may clone, who may use each, and whether approved work is
    pushed back (as branch acode/<session>)."""

    form = RepositoryForm
    list_display = ("name", "shown_source", "default_branch", "pushable", "created_at")
    list_filter = ("pushable",)
    search_fields = ("name", "description")
    filter_horizontal = ("users", "groups")

    @admin.display(description="source", ordering="source")
    def shown_source(self, obj: Repository) -> str:
        return masked_remote(obj.source)


@admin.register(SecretRule)
class SecretRuleAdmin(admin.ModelAdmin):
    """A team's secret rules: patterns that mark secrets, and files or values that are not."""

    list_display = ("kind", "value", "description", "created_by", "created_at")
    list_filter = ("kind",)
    search_fields = ("value", "description")

    def save_model(self, request: HttpRequest, obj: SecretRule, form: Any, change: bool) -> None:
        secret_rule_save(rule=obj, actor=request.user.get_username())

    def delete_model(self, request: HttpRequest, obj: SecretRule) -> None:
        secret_rule_delete(rule=obj, actor=request.user.get_username())

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[SecretRule]) -> None:
        for rule in queryset:
            secret_rule_delete(rule=rule, actor=request.user.get_username())


@admin.register(DeliveredCommit)
class DeliveredCommitAdmin(_ReadOnly):
    """Commits approved work became, and whether they were pushed."""

    list_display = ("sha", "session", "branch", "approved_by", "push_status", "created_at")
    list_filter = ("push_status",)
    search_fields = ("sha", "message", "session__title")
    fields = (
        "session",
        "run",
        "sha",
        "branch",
        "message",
        "files",
        "approved_by",
        "push_status",
        "push_remote",
        "push_message",
        "pushed_at",
        "created_at",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[DeliveredCommit]:
        return DeliveredCommit.objects.filter(session__in=sessions_visible_to(request.user))


class WorkflowStageFormSet(forms.BaseInlineFormSet):
    """Refuses a stage order a run could not go through (the import checks the same)."""

    def clean(self) -> None:
        super().clean()
        stages, problems = [], []
        for form in self.forms:
            data = getattr(form, "cleaned_data", None)
            if not data or data.get("DELETE") or data.get("position") is None:
                continue
            role = data.get("role")
            stage = (data["position"], data.get("purpose", ""), role.slug if role else None)
            stages.append(stage)
            problems += stage_commands_problems(*stage, data.get("commands"))
        if not stages:
            return
        problems += stage_order_problems(stages)
        if problems:
            raise ValidationError(problems)


class WorkflowStageForm(forms.ModelForm):
    def clean_commands(self) -> list[Any]:
        return self.cleaned_data.get("commands") or []  # left empty: a model decides


class WorkflowStageInline(admin.TabularInline):
    model = WorkflowStage
    form = WorkflowStageForm
    formset = WorkflowStageFormSet
    extra = 0
    ordering = ("position",)
    fields = ("position", "purpose", "role", "max_llm_calls", "max_tokens", "timeout_seconds",
              "model", "commands")  # fmt: skip


@admin.register(WorkflowTemplate)
class WorkflowTemplateAdmin(admin.ModelAdmin):
    """The stages runs go through; saving checks each role stage can follow the one before."""

    list_display = (
        "name", "slug", "risk_tier", "enabled", "final_review", "max_llm_calls", "updated_at"
    )  # fmt: skip
    list_filter = ("risk_tier", "enabled")
    search_fields = ("name", "slug", "description")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [WorkflowStageInline]


@admin.register(RiskSignal)
class RiskSignalAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "tier", "score", "sensitive", "threshold", "enabled")
    list_filter = ("kind", "tier", "sensitive", "enabled")
    search_fields = ("name", "description")


class _ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RunStageInline(_ReadOnlyInline):
    model = RunStage
    fields = (
        "seq",
        "purpose",
        "role",
        "plan_step",
        "revision",
        "status",
        "reason",
        "job",
        "verdict",
        "started_at",
        "finished_at",
    )
    readonly_fields = fields
    ordering = ("seq",)


class RunQuestionInline(_ReadOnlyInline):
    model = RunQuestion
    fields = ("asked_by", "question", "answer", "answered_by", "asked_at", "answered_at")
    readonly_fields = fields


class RunApprovalInline(_ReadOnlyInline):
    model = RunApproval
    fields = ("digest", "status", "requested_at", "expires_at", "decided_by", "reason")
    readonly_fields = fields


@admin.register(Run)
class RunAdmin(_ReadOnly):
    """Runs as they went; answering, approving and cancelling go through the API."""

    list_display = (
        "id",
        "session",
        "template",
        "status",
        "effective_tier",
        "created_by",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "effective_tier", "template")
    search_fields = ("request", "created_by", "session__title")
    date_hierarchy = "created_at"
    fields = (
        "id",
        "session",
        "template",
        "request",
        "status",
        "message",
        "error_code",
        "declared_tier",
        "effective_tier",
        "signals",
        "gate_required",
        "revisions",
        "max_llm_calls",
        "max_tokens",
        "max_seconds",
        "cancel_requested",
        "started_by",
        "created_by",
        "created_at",
        "finished_at",
    )
    readonly_fields = fields
    inlines = [RunStageInline, RunQuestionInline, RunApprovalInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Run]:
        return runs_visible_to(request.user)


from sessions_app import memory_admin  # noqa: E402, F401  (decision memory, issue 41)
