"""Accounts in admin, as Django's own pages, keeping who created an account or gave it
rights (``roles.services.accounts``): such an account does not publish its maker's role
drafts."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User
from django.http import HttpRequest

from roles.account_models import AccountGrantKind
from roles.services.accounts import account_grants_record

_RIGHTS = {"is_staff": AccountGrantKind.STAFF, "is_superuser": AccountGrantKind.SUPERUSER}
_RELATED = {"groups", "user_permissions"}


class AccountAdmin(UserAdmin):
    """Django's user admin; every account it creates or gives rights is recorded."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        kinds = [] if change else [AccountGrantKind.CREATED]
        changed = set(getattr(form, "changed_data", ()))
        kinds += [
            kind for field, kind in _RIGHTS.items() if field in changed and getattr(obj, field)
        ]
        if changed & _RELATED:
            kinds.append(AccountGrantKind.PERMISSIONS)
        account_grants_record(account=obj, by=_user(request), kinds=kinds)


def _user(request: HttpRequest) -> Any:
    user = getattr(request, "user", None)
    return user if user is not None and user.is_authenticated else None


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, AccountAdmin)
