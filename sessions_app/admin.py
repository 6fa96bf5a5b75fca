"""Admin: sessions are read-mostly (the role changes only through a transition); history is read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from sessions_app.models import AgentSession, AuditEvent, PendingChange, Repository, RoleTransition
from sessions_app.permissions import audit_visible_to, sessions_visible_to
from sessions_app.services.sessions import session_update


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


@admin.register(AgentSession)
class AgentSessionAdmin(admin.ModelAdmin):
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
        return False  # their history is append-only; archive instead

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


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    """Repositories sessions may clone, and who may use each."""

    list_display = ("name", "source", "default_branch", "created_at")
    search_fields = ("name", "description", "source")
    filter_horizontal = ("users", "groups")
