"""Admin for custom agents (issue 41): who made which, from which template. Read-only:
an agent is created by its user (dashboard, API) and changed as the role it is."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from roles.models import CustomAgent


@admin.register(CustomAgent)
class CustomAgentAdmin(admin.ModelAdmin):
    list_display = ("role", "created_by_name", "template_slug", "created_at")
    list_filter = ("created_by_name",)
    search_fields = ("role__slug", "role__name", "created_by_name")
    readonly_fields = ("role", "template", "template_slug", "created_by", "created_by_name",
                       "routing_keywords", "created_at")  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # delete the role: its agent row goes with it
