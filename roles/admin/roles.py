"""Admin for roles and their immutable versions."""

from __future__ import annotations

from functools import partial
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import path
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from acode.errors import AcodeError
from roles.admin.base import ServiceAdmin
from roles.admin.drafts import draft_admin_url
from roles.admin.fields import CommandRulesField, LinesField
from roles.admin.preview import preview_view
from roles.decision import examples_check
from roles.mcp.tools import argument_limits
from roles.models import DEFAULT_ROLE_SLUG, ModelEndpoint, Role, RoleVersion
from roles.registry import read_specs, registry
from roles.selectors import role_drafts
from roles.services import examples_refusal, prompt_rejection_record, role_delete, role_save
from roles.validation import (
    CUSTOM_LOCKED_CODE,
    custom_lock_problems,
    model_name_problems,
    role_delete_refusal,
    role_field_problems,
    role_name_problems,
    role_parent_problems,
    role_spec,
    role_text_findings,
)


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
    reassign_models = LinesField(
        required=False,
        help_text="Model endpoints, one per line, in order: a run moves a plan step this role "
        "could not finish (blocked after its attempts) to the next one. Empty: a person "
        "decides. Not the fallback model, which is tried when the model does not answer.",
    )
    command_patterns = CommandRulesField(
        required=False,
        help_text='Command rules, one per line: a JSON object such as {"program": "python", '
        '"module": "pytest", "options": {"-q": null, "-k": "text"}, "args": "paths"}, or a '
        "legacy glob (pytest *). Anything no rule lists is refused. Empty: any command "
        '(still sandboxed). A structured rule may carry its own "examples".',
    )
    examples = forms.JSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "cols": 80}),
        help_text="Calls this role must allow or deny, checked when it is saved: a JSON list "
        'such as [{"tool": "write_file", "arguments": {"path": "src/app.py", "content": "x"}, '
        '"expect": "deny", "why": "reviewers never write"}]. Optional: "name", "rule" (what '
        'the deciding rule starts with), "context" ({"sandbox": "available|unavailable|off", '
        '"layer": true, "links": ["path"]}).',
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
            "examples",
            "capabilities",
            "constraints",
            "prompt_key",
            "context_strategy",
            "preferred_model",
            "fallback_model",
            "reassign_models",
            "reasoning_effort",
            "queue",
            "max_llm_calls",
            "max_tokens",
            "timeout_seconds",
            "max_sub_agents",
            "max_delegation_depth",
            "answer_sets_plan",
            "protected",
        )

    def clean_slug(self) -> str:
        slug = str(self.cleaned_data["slug"])
        if (
            self.instance.pk
            and self.instance.slug == DEFAULT_ROLE_SLUG
            and slug != DEFAULT_ROLE_SLUG
        ):
            raise forms.ValidationError("ACODE-ROL-005: the Default role's slug cannot change.")
        if self.instance.pk and self.instance.protected and slug != self.instance.slug:
            raise forms.ValidationError("ACODE-ROL-004: a protected role's slug cannot change.")
        return slug

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for problem in role_field_problems(data):
            self.add_error(None, f"ACODE-ROL-004: {problem}")
        locked = {"slug": data.get("slug"), "permissions": data.get("permissions")}
        for problem in custom_lock_problems(locked, was_custom=self.instance.custom):
            self.add_error("permissions", f"{CUSTOM_LOCKED_CODE}: {problem}")
        findings = role_text_findings(data)
        if findings:
            prompt_rejection_record(
                where=f"admin role {data.get('slug')}", actor=self.actor, findings=findings
            )
        for finding in findings:
            self.add_error(
                None,
                f"ACODE-PRM-001: dangerous text in {finding['where']} ({finding['rule']}): {finding['match']!r}",
            )
        specs = {spec.slug: spec for _, spec in read_specs()[0]}
        edited = role_spec({"slug": self.instance.slug or "", "name": data.get("name")})
        others = {slug: spec for slug, spec in specs.items() if slug != edited.slug}
        for problem in role_name_problems({**others, edited.slug: edited}):
            self.add_error("name", f"ACODE-ROL-004: {problem}")
        parent = data.get("parent")
        if parent is not None and self.instance.pk:
            for problem in role_parent_problems(
                slug=self.instance.slug, parent_slug=parent.slug, specs=specs
            ):
                self.add_error("parent", f"ACODE-ROL-004: {problem}")
        known = set(ModelEndpoint.objects.values_list("name", flat=True))
        for field in ("preferred_model", "fallback_model", "reassign_models"):
            named = {"slug": self.instance.slug, field: data.get(field)}
            for problem in model_name_problems(named, known):
                self.add_error(field, f"ACODE-API-404: {problem}")
        if not self.errors:
            self._examples_check(data)
        return data

    def clean_examples(self) -> list[Any]:
        value = self.cleaned_data.get("examples")
        if value is None:
            return []
        if not isinstance(value, list):
            raise forms.ValidationError("ACODE-ROL-004: examples must be a JSON list")
        return value

    def _examples_check(self, data: dict[str, Any]) -> None:
        """The role's examples (and its children's) decided against the form's definition as
        every save decides them (``role_examples_enforce``): a failing one is a form error."""
        id_specs, tools = read_specs()
        specs = {spec.slug: spec for _, spec in id_specs if spec.slug != self.instance.slug}
        parent = data.get("parent")
        slug = str(data.get("slug") or self.instance.slug)
        specs[slug] = role_spec({
            "slug": slug, "name": data.get("name"), "parent": parent.slug if parent else None,
            "permissions": [p.code for p in data.get("permissions") or []],
            "allowed_tools": [t.name for t in data.get("allowed_tools") or []],
            "write_paths": data.get("write_paths") or [],
            "command_patterns": data.get("command_patterns") or [],
            "examples": data.get("examples") or [],
        })  # fmt: skip
        refusal = examples_refusal(examples_check(specs, tools, {slug}, limits=argument_limits()))
        if refusal is not None:
            self.add_error(None, f"{refusal.code}: {refusal.message}")


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
class RoleAdmin(ServiceAdmin):
    form = RoleAdminForm
    list_display = (
        "name",
        "slug",
        "colour_badge",
        "context_strategy",
        "prompt_key",
        "tool_count",
        "version",
        "protected",
        "made_by",
    )
    list_filter = ("custom",)
    search_fields = ("name", "slug", "description")
    change_form_template = "admin/roles/role/change_form.html"  # adds "Preview impact"
    filter_horizontal = ("permissions", "allowed_tools")
    readonly_fields = ("access_table", "version", "open_drafts", "made_by")
    inlines = [RoleVersionInline]
    fieldsets = (
        (None, {"fields": ("name", "slug", "description", "colour", "parent", "protected")}),
        ("Custom agent", {"fields": ("made_by",)}),
        (
            "What it may do",
            {
                "fields": (
                    "permissions",
                    "allowed_tools",
                    "write_paths",
                    "command_patterns",
                    "examples",
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
                    "reassign_models",
                    "reasoning_effort",
                    "queue",
                    "max_llm_calls",
                    "max_tokens",
                    "timeout_seconds",
                    "max_sub_agents",
                    "max_delegation_depth",
                )
            },
        ),
        ("Version", {"fields": ("version", "open_drafts")}),
    )

    @admin.display(description="Custom agent made by")
    def made_by(self, obj: Role) -> str:
        """Who made a custom agent (issue 41); "-" for an admin's role."""
        if not obj.custom:
            return "-"
        agent = getattr(obj, "agent", None)
        return agent.created_by_name if agent is not None else "custom (imported)"

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

    @admin.display(description="Drafts waiting for review")
    def open_drafts(self, obj: Role) -> SafeString | str:
        drafts = list(role_drafts(status="open", role=obj.slug)) if obj.pk else []
        if not drafts:
            return "none"
        return format_html_join(
            ", ",
            '<a href="{}">draft #{}</a> by {}',
            ((draft_admin_url(d), d.pk, d.author_name) for d in drafts),
        )

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

    def get_urls(self) -> list[Any]:
        preview = path(
            "<path:object_id>/preview-impact/",
            self.admin_site.admin_view(partial(preview_view, self)),
            name="roles_role_preview",
        )
        return [preview, *super().get_urls()]

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        return type("RoleAdminFormFor", (form,), {"actor": request.user.get_username()})

    def save_model(self, request: HttpRequest, obj: Role, form: Any, change: bool) -> None:
        written = role_save(
            role=obj,
            permissions=form.cleaned_data["permissions"],
            allowed_tools=form.cleaned_data["allowed_tools"],
            user=request.user,  # type: ignore[arg-type]
        )
        request.acode_role_draft = written.draft  # type: ignore[attr-defined]

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        # Django's history says what the save did: for a protected role, only a draft.
        draft = getattr(request, "acode_role_draft", None)
        note = message if draft is None else f"Drafted #{draft.pk}; nothing live changed."
        return super().log_change(request, obj, note)

    def response_change(self, request: HttpRequest, obj: Role) -> HttpResponse:
        draft = getattr(request, "acode_role_draft", None)
        if draft is None:
            return super().response_change(request, obj)
        # A protected role: nothing live changed; say so and show the draft.
        url = draft_admin_url(draft)
        self.message_user(
            request,
            format_html(
                "Role “{}” is protected: nothing live changed. Your edit is "
                '<a href="{}">draft #{}</a>, waiting for another admin to publish it.',
                obj.name,
                url,
                draft.pk,
            ),
            messages.WARNING,
        )
        return HttpResponseRedirect(url)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        # Django lists what a delete would cascade to; a role in use is refused instead,
        # with the reason the API gives (the page then says it cannot be deleted).
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        for role in objs:
            refusal = role_delete_refusal(role)
            if refusal is not None:
                protected = [*protected, f"{refusal.code}: {refusal.message}"]
        return deleted, counts, perms_needed, protected

    def has_delete_permission(self, request: HttpRequest, obj: Role | None = None) -> bool:
        if obj is not None and obj.slug == DEFAULT_ROLE_SLUG:
            return False
        return super().has_delete_permission(request, obj)

    def delete_model(self, request: HttpRequest, obj: Role) -> None:
        try:
            role_delete(role=obj, user=request.user)  # type: ignore[arg-type]
        except AcodeError as exc:  # started being used after the confirmation page
            self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)


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
