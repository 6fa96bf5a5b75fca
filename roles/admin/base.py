"""What the admins of role data share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

from django.contrib import admin, messages
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from acode.errors import AcodeError


class RowServices(NamedTuple):
    """The services an admin writes its rows through, both called as
    ``service(<keyword>=row, user=the admin's user)``."""

    keyword: str
    save: Callable[..., Any]
    delete: Callable[..., Any]


class ServiceAdmin(admin.ModelAdmin):
    """An admin whose saves and deletes go through ``roles.services``, never the ORM.

    ``services`` names them; an admin whose services take more than the row and the user
    overrides ``save_model`` and ``delete_model``. A service's refusal that a form could
    not foresee (one decided on the whole of role data, as ACODE-ROL-015) rolls the page's
    transaction back and is said on the page it came from, instead of a server error."""

    services: ClassVar[RowServices | None] = None

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        services = self._services()
        services.save(**{services.keyword: obj}, user=request.user)
        self.written(request)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        services = self._services()
        services.delete(**{services.keyword: obj}, user=request.user)
        self.written(request)

    def written(self, request: HttpRequest) -> None:
        """After each save or delete through ``services``: what the page says of it."""

    def _services(self) -> RowServices:
        if self.services is None:
            raise ImproperlyConfigured(f"{type(self).__name__} names no services.")
        return self.services

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
