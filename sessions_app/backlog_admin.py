"""Admin for backlogs: projects are edited here; a task's status and priority change only
through the backlog services (the actions below), like on the board and in the API."""

from __future__ import annotations

from typing import cast

from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpRequest

from acode.errors import AcodeError
from sessions_app.models import BacklogProject, BacklogTask, Epic, TaskPriority
from sessions_app.services.backlog import task_accept, task_reprioritise, task_unblock
from sessions_app.services.backlog_access import projects_visible_to


@admin.register(BacklogProject)
class BacklogProjectAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "owner", "repository", "max_concurrent_runs", "run_risk")
    search_fields = ("slug", "title")
    # The Product Manager's session and jobs are the services' (services.backlog_pm).
    readonly_fields = ("pm_session", "pm_job", "pm_job_kind", "pm_job_open", "checked_through")

    def get_queryset(self, request: HttpRequest) -> QuerySet[BacklogProject]:
        return projects_visible_to(request.user)


@admin.register(Epic)
class EpicAdmin(admin.ModelAdmin):
    list_display = ("key", "title", "project")
    list_filter = ("project",)


def _user(request: HttpRequest) -> User:
    return cast(User, request.user)  # admin pages: always a signed-in staff user


def _each(request: HttpRequest, tasks: QuerySet[BacklogTask], what: str, act: object) -> None:
    done = 0
    for task in tasks:
        try:
            act(task)  # type: ignore[operator]
            done += 1
        except AcodeError as exc:
            messages.error(request, f"{task.key}: {exc.message} ({exc.code})")
    messages.info(request, f"{what}: {done} task(s).")


@admin.register(BacklogTask)
class BacklogTaskAdmin(admin.ModelAdmin):
    list_display = ("key", "title", "project", "priority", "status", "attempts", "run")
    list_filter = ("project", "status", "priority")
    search_fields = ("key", "title", "description")
    readonly_fields = ("status", "priority", "reason", "conflict", "attempts", "blocked_runs",
                       "run", "session", "merged_commit", "proposed_by", "created_by")  # fmt: skip
    filter_horizontal = ("depends_on",)
    actions = ["accept", "unblock", "priority_high", "priority_low"]

    def save_model(
        self, request: HttpRequest, obj: BacklogTask, form: object, change: bool
    ) -> None:
        if not change:
            obj.created_by = request.user.get_username()
        super().save_model(request, obj, form, change)

    @admin.action(description="Accept the selected proposals")
    def accept(self, request: HttpRequest, queryset: QuerySet[BacklogTask]) -> None:
        _each(request, queryset, "Accepted", lambda t: task_accept(task=t, user=_user(request)))

    @admin.action(description="Send the selected tasks back to the backlog (unblock)")
    def unblock(self, request: HttpRequest, queryset: QuerySet[BacklogTask]) -> None:
        _each(request, queryset, "Unblocked", lambda t: task_unblock(task=t, user=_user(request)))

    @admin.action(description="Set priority: high")
    def priority_high(self, request: HttpRequest, queryset: QuerySet[BacklogTask]) -> None:
        _each(request, queryset, "High priority", lambda t: task_reprioritise(
            task=t, priority=TaskPriority.HIGH, user=_user(request)))  # fmt: skip

    @admin.action(description="Set priority: low")
    def priority_low(self, request: HttpRequest, queryset: QuerySet[BacklogTask]) -> None:
        _each(request, queryset, "Low priority", lambda t: task_reprioritise(
            task=t, priority=TaskPriority.LOW, user=_user(request)))  # fmt: skip
