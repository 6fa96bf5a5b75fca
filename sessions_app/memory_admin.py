"""Admin for decision memory (issue 41): people's remembered answers, revocable."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from acode.errors import AcodeError
from sessions_app.models import RememberedAnswer
from sessions_app.services.memory import may_revoke_answers, remembered_answer_revoke


@admin.register(RememberedAnswer)
class RememberedAnswerAdmin(admin.ModelAdmin):
    list_display = ("tool", "target", "role_slug", "allowed", "answered_by_name", "created_at",
                    "revoked_at", "revoked_by_name")  # fmt: skip
    list_filter = ("allowed", "role_slug", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("tool", "target", "answered_by_name")
    readonly_fields = ("session", "role_slug", "key", "tool", "target", "rule", "allowed",
                       "note", "source", "answered_by", "answered_by_name", "created_at",
                       "revoked_at", "revoked_by_name")  # fmt: skip
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoked, never deleted: the audit names it

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return may_revoke_answers(request.user)

    @admin.action(description="Revoke: the next such ask goes to a person", permissions=["revoke"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[RememberedAnswer]) -> None:
        for answer in queryset:
            try:
                remembered_answer_revoke(answer_id=answer.pk, user=request.user)
            except AcodeError as exc:
                self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)
                return
        self.message_user(request, f"Revoked {queryset.count()} remembered answer(s).")
