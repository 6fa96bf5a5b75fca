"""What the admins of role data share."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest


class ServiceAdmin(admin.ModelAdmin):
    """An admin whose saves and deletes go through ``roles.services``, never the ORM."""

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        # save_model's service saved the many-to-many fields with the object.
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            self.delete_model(request, obj)
