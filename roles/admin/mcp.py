"""Admin for MCP servers and their pinned tool definitions (issue 24).

Definitions are never edited here: the server says what a tool is. An admin reads the
description (it reaches the model) and, for a changed tool, the diff from what was
approved, then approves it; every approval goes through ``roles.services.mcp``.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from acode.errors import AcodeError
from roles.admin.base import RowServices, ServiceAdmin
from roles.models import McpArgumentLimit, McpServer, McpToolDefinition
from roles.services.mcp import (
    definition_diff,
    mcp_argument_limit_delete,
    mcp_argument_limit_save,
    mcp_server_delete,
    mcp_server_save,
    mcp_tool_approve,
)
from roles.signals import mcp_refresh_requested


@admin.register(McpServer)
class McpServerAdmin(ServiceAdmin):
    list_display = ("slug", "transport", "enabled", "network", "status", "checked_at", "error")
    list_filter = ("transport", "enabled", "status")
    search_fields = ("slug", "description")
    readonly_fields = ("status", "last_error", "checked_at")
    actions = ["list_tools"]
    services = RowServices("server", mcp_server_save, mcp_server_delete)

    @admin.action(description="List their tools now (new ones then wait for approval)")
    def list_tools(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        for server in queryset:
            for _, result in mcp_refresh_requested.send_robust(
                sender=None, server=server, actor=request.user.get_username()
            ):
                if isinstance(result, Exception):
                    self.message_user(request, f"{server.slug}: {result}", messages.ERROR)
        self.message_user(request, "Listed; see MCP tool definitions.", messages.INFO)

    @admin.display(description="Last error")
    def error(self, obj: McpServer) -> str:
        return obj.last_error[:120]


@admin.register(McpToolDefinition)
class McpToolDefinitionAdmin(admin.ModelAdmin):
    list_display = ("__str__", "state", "description", "approved_by", "approved_at", "seen_at")
    list_filter = ("state", "server")
    search_fields = ("name", "server__slug")
    actions = ["approve"]
    fields = (
        "server", "name", "state", "description", "change", "live_hash", "approved_hash",
        "approved_by", "approved_at", "seen_at",
    )  # fmt: skip
    readonly_fields = fields

    @admin.display(description="Description (reaches the model)")
    def description(self, obj: McpToolDefinition) -> str:
        return str(obj.live_definition.get("description", ""))

    @admin.display(description="Change since approval")
    def change(self, obj: McpToolDefinition) -> SafeString:
        return format_html("<pre>{}</pre>", definition_diff(obj) or "(none)")

    def get_queryset(self, request: HttpRequest) -> QuerySet[McpToolDefinition]:
        return super().get_queryset(request).select_related("server")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # definitions come from the server's listing, never typed in

    @admin.action(description="Approve the definitions listed now…", permissions=["change"])
    def approve(
        self, request: HttpRequest, queryset: QuerySet[McpToolDefinition]
    ) -> HttpResponse | None:
        """First a page showing each definition (description, schema, change, hash); its
        confirmation approves exactly the hash shown, and nothing the server says since."""
        if "confirm" not in request.POST:
            return TemplateResponse(
                request, "admin/roles/mcp_approve_confirm.html",
                {**self.admin_site.each_context(request), "title": "Approve MCP tool definitions",
                 "tools": [(t, definition_diff(t)) for t in queryset], "opts": self.model._meta,
                 "action_checkbox_name": ACTION_CHECKBOX_NAME},
            )  # fmt: skip
        approved = 0
        for tool in queryset:
            shown = str(request.POST.get(f"hash-{tool.pk}", ""))
            try:
                if not shown:
                    raise AcodeError("ACODE-API-409", f"{tool}: no definition was shown.", {})
                mcp_tool_approve(tool=tool, user=request.user, expected_hash=shown)  # type: ignore[arg-type]
                approved += 1
            except AcodeError as exc:  # changed since shown, or a protected role would gain it
                self.message_user(
                    request, f"{exc.code}: {exc.message} Nothing was approved for {tool}.",
                    messages.ERROR,
                )  # fmt: skip
        if approved:
            self.message_user(request, f"Approved {approved} definition(s).", messages.SUCCESS)
        return None


@admin.register(McpArgumentLimit)
class McpArgumentLimitAdmin(ServiceAdmin):
    """A role's JSON Schema narrowing of one tool's arguments (any tool, MCP ones foremost)."""

    list_display = ("role", "tool")
    list_filter = ("role",)
    search_fields = ("tool", "role__slug")
    services = RowServices("limit", mcp_argument_limit_save, mcp_argument_limit_delete)
