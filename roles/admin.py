"""Admin for role data. Every save goes through ``roles.services`` (validation, versions)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from acode.errors import AcodeError
from roles.models import (
    DEFAULT_ROLE_SLUG,
    ModelEndpoint,
    Permission,
    PromptComponent,
    PromptPack,
    Role,
    RoleVersion,
    Tool,
    TransitionRule,
)
from roles.prompts import find_dangerous
from roles.registry import registry
from roles.services import (
    prompt_component_save,
    role_check_parent,
    role_delete,
    role_field_problems,
    role_saved,
    role_text_findings,
    role_versions_record,
)
from roles.signals import prompt_rejected


class LinesField(forms.CharField):
    """An ordered list of strings edited as one item per line."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 80})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(str(v) for v in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        if isinstance(value, list):
            return [str(v).strip() for v in value if str(v).strip()]
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


class RoleAdminForm(forms.ModelForm):
    actor = "admin"  # replaced per request by RoleAdmin.get_form
    capabilities = LinesField(required=False, help_text="One per line, in order.")
    constraints = LinesField(
        required=False, help_text="One per line, in order; shown to the model first."
    )
    write_paths = LinesField(
        required=False,
        help_text="Globs relative to the workspace, one per line (e.g. docs/**). Empty: anywhere.",
    )
    command_patterns = LinesField(
        required=False, help_text="Command globs, one per line (e.g. pytest *). Empty: any command."
    )

    class Meta:
        model = Role
        fields = (
            "name",
            "slug",
            "description",
            "colour",
            "parent",
            "permissions",
            "allowed_tools",
            "write_paths",
            "command_patterns",
            "capabilities",
            "constraints",
            "prompt_key",
            "context_strategy",
            "preferred_model",
            "fallback_model",
            "queue",
            "max_llm_calls",
            "max_tokens",
            "timeout_seconds",
            "answer_sets_plan",
        )

    def clean_slug(self) -> str:
        slug = str(self.cleaned_data["slug"])
        if (
            self.instance.pk
            and self.instance.slug == DEFAULT_ROLE_SLUG
            and slug != DEFAULT_ROLE_SLUG
        ):
            raise forms.ValidationError("ACODE-ROL-005: the Default role's slug cannot change.")
        return slug

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for problem in role_field_problems(data):
            self.add_error(None, f"ACODE-ROL-004: {problem}")
        findings = role_text_findings(data)
        if findings:
            prompt_rejected.send(
                sender=Role,
                where=f"admin role {data.get('slug')}",
                actor=self.actor,
                findings=findings,
            )
        for finding in findings:
            self.add_error(
                None,
                f"ACODE-PRM-001: dangerous text in {finding['where']} ({finding['rule']}): {finding['match']!r}",
            )
        parent = data.get("parent")
        if parent is not None and self.instance.pk:
            try:
                role_check_parent(role=self.instance, parent=parent)
            except AcodeError as exc:
                self.add_error("parent", f"{exc.code}: {exc.message}")
        return data


class RoleVersionInline(admin.TabularInline):
    model = RoleVersion
    extra = 0
    can_delete = False
    fields = ("number", "content_hash", "actor", "created_at")
    readonly_fields = fields
    ordering = ("-number",)
    verbose_name_plural = "Version history (immutable)"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Role)
class RoleAdmin(admin.ModelAdmin):
    form = RoleAdminForm
    list_display = (
        "name",
        "slug",
        "colour_badge",
        "context_strategy",
        "prompt_key",
        "tool_count",
        "version",
    )
    search_fields = ("name", "slug", "description")
    filter_horizontal = ("permissions", "allowed_tools")
    readonly_fields = ("access_table", "version")
    inlines = [RoleVersionInline]
    fieldsets = (
        (None, {"fields": ("name", "slug", "description", "colour", "parent")}),
        (
            "What it may do",
            {
                "fields": (
                    "permissions",
                    "allowed_tools",
                    "write_paths",
                    "command_patterns",
                    "access_table",
                )
            },
        ),
        (
            "Behaviour",
            {
                "fields": (
                    "capabilities",
                    "constraints",
                    "prompt_key",
                    "context_strategy",
                    "answer_sets_plan",
                )
            },
        ),
        (
            "Models and budgets",
            {
                "fields": (
                    "preferred_model",
                    "fallback_model",
                    "queue",
                    "max_llm_calls",
                    "max_tokens",
                    "timeout_seconds",
                )
            },
        ),
        ("Version", {"fields": ("version",)}),
    )

    @admin.display(description="Colour")
    def colour_badge(self, obj: Role) -> SafeString:
        return render_to_string("admin/roles/colour_badge.html", {"colour": obj.colour})

    @admin.display(description="Tools")
    def tool_count(self, obj: Role) -> int:
        return len(registry.get(obj.slug).access.tools)

    @admin.display(description="Current version")
    def version(self, obj: Role) -> str:
        if not obj.pk:
            return "-"
        role = registry.get(obj.slug)
        return f"v{role.version} · {role.content_hash[:12]}" if role.version else "unsaved changes"

    @admin.display(description="Effective tools (computed)")
    def access_table(self, obj: Role) -> SafeString | str:
        if not obj.pk:
            return "Shown after the role is saved."
        registry.sync()
        role = registry.get(obj.slug)
        return render_to_string(
            "admin/roles/access_table.html",
            {"granted": registry.effective_tools(obj.slug), "withheld": role.access.withheld},
        )

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        return type("RoleAdminFormFor", (form,), {"actor": request.user.get_username()})

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        role_saved(role=form.instance, user=request.user)  # type: ignore[arg-type]

    def has_delete_permission(self, request: HttpRequest, obj: Role | None = None) -> bool:
        if obj is not None and obj.slug == DEFAULT_ROLE_SLUG:
            return False
        return super().has_delete_permission(request, obj)

    def delete_model(self, request: HttpRequest, obj: Role) -> None:
        try:
            role_delete(role=obj, user=request.user)  # type: ignore[arg-type]
        except AcodeError as exc:
            self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Role]) -> None:
        for role in queryset:
            self.delete_model(request, role)


class _VersionsOnSave(admin.ModelAdmin):
    """Tools and permissions change what roles get: re-version roles after saving."""

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        role_versions_record(user=request.user)  # type: ignore[arg-type]

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        super().delete_model(request, obj)
        role_versions_record(user=request.user)  # type: ignore[arg-type]


@admin.register(Tool)
class ToolAdmin(_VersionsOnSave):
    list_display = ("name", "description", "permissions_needed", "enabled")
    list_filter = ("enabled",)
    search_fields = ("name", "description")
    filter_horizontal = ("required_permissions",)

    @admin.display(description="Required permissions")
    def permissions_needed(self, obj: Tool) -> str:
        return ", ".join(p.code for p in obj.required_permissions.all())

    def get_queryset(self, request: HttpRequest) -> QuerySet[Tool]:
        return super().get_queryset(request).prefetch_related("required_permissions")


@admin.register(Permission)
class PermissionAdmin(_VersionsOnSave):
    list_display = ("code", "description")
    search_fields = ("code", "description")


@admin.register(TransitionRule)
class TransitionRuleAdmin(admin.ModelAdmin):
    list_display = ("from_role", "to_role", "precondition", "explanation")
    list_filter = ("precondition", "from_role", "to_role")


class PromptComponentForm(forms.ModelForm):
    class Meta:
        model = PromptComponent
        fields = ("key", "content")

    def __init__(self, *args: Any, actor: str = "admin", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.actor = actor

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        content = data.get("content") or ""
        findings = find_dangerous(content)
        if findings:
            prompt_rejected.send(
                sender=PromptComponent,
                where=f"admin prompt {data.get('key')}",
                actor=self.actor,
                findings=[{"rule": f.rule, "match": f.match, "line": f.line} for f in findings],
            )
            described = "; ".join(f"{f.rule}: {f.match!r} (line {f.line})" for f in findings)
            raise forms.ValidationError(
                f"ACODE-PRM-001: dangerous prompt content refused. {described}"
            )
        return data


class PromptComponentInline(admin.StackedInline):
    model = PromptComponent
    form = PromptComponentForm
    extra = 0


@admin.register(PromptPack)
class PromptPackAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "description")
    inlines = [PromptComponentInline]

    def get_formset_kwargs(
        self, request: HttpRequest, obj: Any, inline: Any, prefix: str
    ) -> dict[str, Any]:
        kwargs = super().get_formset_kwargs(request, obj, inline, prefix)
        kwargs["form_kwargs"] = {"actor": request.user.get_username()}
        return kwargs

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        components = formset.save(commit=False)
        for obj in formset.deleted_objects:
            obj.delete()
        for component in components:
            prompt_component_save(component=component, actor=request.user.get_username())
        formset.save_m2m()


@admin.register(RoleVersion)
class RoleVersionAdmin(admin.ModelAdmin):
    list_display = ("role_slug", "number", "content_hash", "actor", "created_at")
    list_filter = ("role_slug",)
    readonly_fields = (
        "role",
        "role_slug",
        "number",
        "content_hash",
        "snapshot",
        "actor",
        "user",
        "created_at",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "model", "base_url", "context_window", "enabled")
    list_filter = ("kind", "enabled")
    search_fields = ("name", "model", "base_url")
