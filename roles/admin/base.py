"""What the admins of role data share."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from acode.errors import AcodeError


class ServiceAdmin(admin.ModelAdmin):
    """An admin whose saves and deletes go through ``roles.services``, never the ORM.

    A service's refusal that a form could not foresee (one decided on the whole of role
    data, as ACODE-ROL-015) rolls the page's transaction back and is said on the page it
    came from, instead of a server error."""

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        # save_model's service saved the many-to-many fields with the object.
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            self.delete_model(request, obj)

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return super().changeform_view(request, *args, **kwargs)
        except AcodeError as exc:
            return self._refused(request, exc)

    def delete_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return super().delete_view(request, *args, **kwargs)
        except AcodeError as exc:
            return self._refused(request, exc)

    def changelist_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:  # bulk deletes and the other actions: all of one, or none
            with transaction.atomic():
                return super().changelist_view(request, *args, **kwargs)
        except AcodeError as exc:
            return self._refused(request, exc)

    def _refused(self, request: HttpRequest, exc: AcodeError) -> HttpResponse:
        self.message_user(request, f"{exc.code}: {exc.message} Nothing was saved.", messages.ERROR)
        return HttpResponseRedirect(request.get_full_path())
