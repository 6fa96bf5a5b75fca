"""Admin for roles and their immutable versions."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import path
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from acode.errors import AcodeError
from roles.admin.base import ServiceAdmin
from roles.admin.drafts import draft_admin_url
from roles.admin.preview import preview_view
from roles.admin.role_form import MODELS_AND_BUDGETS, WHAT_IT_MAY_DO, RoleAdminForm
from roles.models import DEFAULT_ROLE_SLUG, Role, RoleVersion
from roles.registry import registry
from roles.selectors import role_drafts
from roles.services import role_delete, role_save
from roles.validation import (
    role_delete_refusal,
)


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
            {"fields": (*WHAT_IT_MAY_DO, "access_table")},
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
            {"fields": MODELS_AND_BUDGETS},
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
