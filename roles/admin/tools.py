"""Admin for tools, permissions, transition rules and model endpoints."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from acode.errors import AcodeError
from acode.llm import endpoint_from_row, model_check
from roles.admin.base import RowServices, ServiceAdmin
from roles.models import EndpointKind, ModelEndpoint, Permission, Tool, TransitionRule
from roles.registry import tool_specs
from roles.services import (
    catalog_examples_check,
    permission_delete,
    permission_save,
    tool_delete,
    tool_save,
    transition_rule_delete,
    transition_rule_save,
)
from roles.services.endpoints import model_endpoint_problems, model_endpoint_store
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

    def clean(self) -> dict[str, Any]:
        """The save's examples check (``tool_save``), here so a refusal is a form error."""
        data = super().clean() or {}
        name = data.get("name") or self.instance.name
        enabled = bool(data.get("enabled", self.instance.enabled))
        tools = [dataclasses.replace(t, enabled=enabled) if t.name == name else t
                 for t in tool_specs()]  # fmt: skip
        _examples_form_check(self, tools=tools)
        return data


class PermissionForm(forms.ModelForm):
    class Meta:
        model = Permission
        fields = ("code", "description")

    def clean(self) -> dict[str, Any]:
        """The save's examples check (``permission_save``) for a renamed code."""
        data = super().clean() or {}
        old, new = self.instance.code if self.instance.pk else "", data.get("code")
        if old and new and new != old:
            _examples_form_check(self, renamed={old: str(new)})
        return data


def _examples_form_check(form: forms.ModelForm, **change: Any) -> None:
    try:
        catalog_examples_check(**change)
    except AcodeError as exc:
        form.add_error(None, f"{exc.code}: {exc.message}")


def _examples_warning(admin_: admin.ModelAdmin, request: HttpRequest) -> None:
    """Examples that fail because access narrowed: saved, and said."""
    failing = catalog_examples_check()
    if failing:
        text = "; ".join(r.message() for r in failing[:5])
        more = f" (and {len(failing) - 5} more)" if len(failing) > 5 else ""
        admin_.message_user(
            request,
            f"Saved. {len(failing)} policy example(s) now fail: {text}{more}. "
            "Update the roles' examples if this narrowing is meant to last.",
            messages.WARNING,
        )


class CatalogAdmin(ServiceAdmin):
    """Tools and permissions: a save or delete that narrows access says which policy
    examples now fail."""

    def written(self, request: HttpRequest) -> None:
        _examples_warning(self, request)


@admin.register(Tool)
class ToolAdmin(CatalogAdmin):
    """Enable, describe and order the tools acode declares; what a tool takes and needs is
    shown, not edited (it is declared in code, ``roles.tools``)."""

    form = ToolForm
    list_display = ("name", "shown_description", "permissions_needed", "writes", "enabled",
                    "position")  # fmt: skip
    list_editable = ("enabled", "position")
    list_filter = ("enabled",)
    search_fields = ("name", "description")
    readonly_fields = ("permissions_needed", "writes", "arguments")
    services = RowServices("tool", tool_save, tool_delete)

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

    def get_changelist_form(self, request: HttpRequest, **kwargs: Any) -> Any:
        return super().get_changelist_form(request, form=ToolForm, **kwargs)


@admin.register(Permission)
class PermissionAdmin(CatalogAdmin):
    form = PermissionForm
    list_display = ("code", "description")
    search_fields = ("code", "description")
    services = RowServices("permission", permission_save, permission_delete)


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
    services = RowServices("rule", transition_rule_save, transition_rule_delete)


class ModelEndpointForm(forms.ModelForm):
    """What the endpoint's kind needs, checked as its save checks it (ACODE-LLM-004)."""

    class Meta:
        model = ModelEndpoint
        fields = (
            "name", "kind", "enabled", "context_window", "base_url", "model", "api_key_env",
            "supports_json_schema", "schema_format", "script", "input_price", "output_price",
        )  # fmt: skip

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        probe = ModelEndpoint(**{k: v for k, v in data.items() if k in SAVED_FIELDS})
        probe.kind = data.get("kind") or self.instance.kind
        for problem in model_endpoint_problems(probe):
            field, _, text = problem.partition(": ")
            target = field.split(" ")[0] if field.split(" ")[0] in self.fields else None
            self.add_error(target, f"ACODE-LLM-004: {text if target else problem}")
        return data


SAVED_FIELDS = frozenset(f.name for f in ModelEndpoint._meta.concrete_fields) - {"id"}
SERVER_FIELDSET = (
    "An OpenAI-compatible server (kind openai)",
    {
        "fields": ("base_url", "model", "api_key_env", "supports_json_schema", "schema_format"),
        "description": "Only for an OpenAI-compatible server; a scripted endpoint keeps none.",
    },
)
SCRIPT_FIELDSET = (
    "Scripted replies (kind scripted)",
    {
        "fields": ("script",),
        "description": "Only for a scripted endpoint: the replies to replay, a list of steps "
        'such as {"content": "…", "tool_calls": [{"name": "create_file", "arguments": '
        '{…}}], "delay": 2}; a list of such lists gives each job of a role in a session its '
        "own (README, Scripted model endpoints).",
    },
)
PICK_KIND = (
    'Pick the kind to see only the fields it uses: <a href="?kind=openai">an OpenAI-compatible '
    'server</a> or <a href="?kind=scripted">scripted replies</a> (tests and demos).'
)
COMMON_FIELDSETS = (
    (None, {"fields": ("name", "kind", "enabled", "context_window")}),
    ("Price (the usage page's cost column)", {"fields": ("input_price", "output_price")}),
)


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    """The form asks only for what the endpoint's kind uses: an existing endpoint shows its
    kind's fields; a new one its kind's, chosen with ``?kind=scripted`` (the add page links
    to both), both kinds' until then."""

    form = ModelEndpointForm
    list_display = (
        "name",
        "kind_label",
        "model",
        "base_url",
        "context_window",
        "supports_json_schema",
        "input_price",
        "output_price",
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

    @admin.display(description="Kind", ordering="kind")
    def kind_label(self, obj: ModelEndpoint) -> str:
        return "scripted (replays a script)" if obj.is_scripted else "OpenAI-compatible"

    def _kind(self, request: HttpRequest, obj: ModelEndpoint | None) -> str:
        if obj is not None:
            return obj.kind
        wanted = request.POST.get("kind") or request.GET.get("kind") or ""
        return wanted if wanted in EndpointKind.values else ""

    def get_fieldsets(self, request: HttpRequest, obj: ModelEndpoint | None = None) -> Any:
        kind = self._kind(request, obj)
        by_kind: dict[str, tuple[Any, ...]] = {
            EndpointKind.SCRIPTED.value: (SCRIPT_FIELDSET,),
            EndpointKind.OPENAI.value: (SERVER_FIELDSET,),
        }
        head: Any = COMMON_FIELDSETS[0]
        if not kind:
            head = (None, {**head[1], "description": PICK_KIND})
        return (head, *by_kind.get(kind, (SERVER_FIELDSET, SCRIPT_FIELDSET)),
                *COMMON_FIELDSETS[1:])  # fmt: skip

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        initial = super().get_changeform_initial_data(request)
        if self._kind(request, None):
            initial["kind"] = self._kind(request, None)
        return initial

    def save_model(
        self, request: HttpRequest, obj: ModelEndpoint, form: forms.ModelForm, change: bool
    ) -> None:
        model_endpoint_store(endpoint=obj, user=request.user)  # type: ignore[arg-type]
