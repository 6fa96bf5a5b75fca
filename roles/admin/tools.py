"""Admin for tools, permissions, transition rules and model endpoints."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from acode.errors import AcodeError
from acode.llm import endpoint_from_row, model_check
from roles.admin.base import ServiceAdmin
from roles.models import ModelEndpoint, Permission, Tool, TransitionRule
from roles.services import (
    permission_delete,
    permission_save,
    tool_delete,
    tool_save,
    transition_rule_delete,
    transition_rule_save,
)
from roles.tools import ToolDeclaration, declared_tools
from roles.validation import tool_name_problems, transition_rule_problems


class ToolForm(forms.ModelForm):
    class Meta:
        model = Tool
        fields = ("name", "description", "enabled", "position")

    def clean_name(self) -> str:
        name = str(self.cleaned_data["name"])
        for problem in tool_name_problems(name):
            raise forms.ValidationError(f"ACODE-ROL-004: {problem}")
        return name


@admin.register(Tool)
class ToolAdmin(ServiceAdmin):
    """Enable, describe and order the tools acode declares; what a tool takes and needs is
    shown, not edited (it is declared in code, ``roles.tools``)."""

    form = ToolForm
    list_display = ("name", "shown_description", "permissions_needed", "writes", "enabled",
                    "position")  # fmt: skip
    list_editable = ("enabled", "position")
    list_filter = ("enabled",)
    search_fields = ("name", "description")
    readonly_fields = ("permissions_needed", "writes", "arguments")

    @staticmethod
    def _declaration(obj: Tool) -> ToolDeclaration | None:
        return declared_tools().get(obj.name)

    @admin.display(description="Description")
    def shown_description(self, obj: Tool) -> str:
        declaration = self._declaration(obj)
        return obj.description or (declaration.description if declaration else "")

    @admin.display(description="Required permissions")
    def permissions_needed(self, obj: Tool) -> str:
        declaration = self._declaration(obj)
        return ", ".join(declaration.required_permissions) if declaration else "-"

    @admin.display(description="Writes")
    def writes(self, obj: Tool) -> str:
        declaration = self._declaration(obj)
        if declaration is None:
            return "-"
        return declaration.writes or ("commands" if declaration.command else "no")

    @admin.display(description="Argument schema")
    def arguments(self, obj: Tool) -> str:
        declaration = self._declaration(obj)
        return json.dumps(dict(declaration.argument_schema), indent=2) if declaration else "-"

    def get_readonly_fields(self, request: HttpRequest, obj: Tool | None = None) -> Any:
        # A row stays the row of its tool: renaming it would switch another tool on or off.
        readonly = tuple(self.readonly_fields)
        return (*readonly, "name") if obj is not None else readonly

    def save_model(self, request: HttpRequest, obj: Tool, form: Any, change: bool) -> None:
        tool_save(tool=obj, user=request.user)  # type: ignore[arg-type]

    def delete_model(self, request: HttpRequest, obj: Tool) -> None:
        tool_delete(tool=obj, user=request.user)  # type: ignore[arg-type]


@admin.register(Permission)
class PermissionAdmin(ServiceAdmin):
    list_display = ("code", "description")
    search_fields = ("code", "description")

    def save_model(self, request: HttpRequest, obj: Permission, form: Any, change: bool) -> None:
        permission_save(permission=obj, user=request.user)  # type: ignore[arg-type]

    def delete_model(self, request: HttpRequest, obj: Permission) -> None:
        permission_delete(permission=obj, user=request.user)  # type: ignore[arg-type]


class TransitionRuleForm(forms.ModelForm):
    class Meta:
        model = TransitionRule
        fields = ("from_role", "to_role", "precondition", "explanation")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        ends = (data.get("from_role"), data.get("to_role"))
        if ends[0] is not None and ends[1] is not None:
            slugs = (ends[0].slug, ends[1].slug)
            for problem in transition_rule_problems(
                from_slug=slugs[0],
                to_slug=slugs[1],
                precondition=data.get("precondition"),
                known_roles=slugs,
            ):
                self.add_error(None, f"ACODE-ROL-004: {problem}")
        return data


@admin.register(TransitionRule)
class TransitionRuleAdmin(ServiceAdmin):
    form = TransitionRuleForm
    list_display = ("from_role", "to_role", "precondition", "explanation")
    list_filter = ("precondition", "from_role", "to_role")

    def save_model(
        self, request: HttpRequest, obj: TransitionRule, form: Any, change: bool
    ) -> None:
        transition_rule_save(rule=obj, user=request.user)  # type: ignore[arg-type]

    def delete_model(self, request: HttpRequest, obj: TransitionRule) -> None:
        transition_rule_delete(rule=obj, user=request.user)  # type: ignore[arg-type]


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "kind",
        "model",
        "base_url",
        "context_window",
        "supports_json_schema",
        "enabled",
    )
    list_filter = ("kind", "enabled")
    search_fields = ("name", "model", "base_url")
    actions = ["check_endpoints"]

    @admin.action(
        description="Check: can the model call tools, how fast, what context window",
        permissions=["change"],
    )
    def check_endpoints(self, request: HttpRequest, queryset: QuerySet[ModelEndpoint]) -> None:
        for row in queryset:
            try:
                found = model_check(endpoint_from_row(row))
            except AcodeError as exc:
                self.message_user(request, f"{row.name}: {exc.message}", messages.WARNING)
                continue
            window = (
                f"context window {found.context_window} (server)"
                if found.context_window
                else f"context window not reported (configured: {found.configured_context_window})"
            )
            level = messages.SUCCESS if found.can_call_tools else messages.WARNING
            self.message_user(request, f"{row.name}: {found.message} {window}.", level)
