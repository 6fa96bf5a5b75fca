"""The HTML login pages (dashboard and admin) with the login rate limit of acode.ratelimit.

The limit is checked in the authentication form, before the password is, so the page
shows the refusal like any other login error; :func:`rate_limited_login` then answers
429 with ``Retry-After`` instead of 200.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponseBase

from acode.ratelimit import login_retry_after

_RETRY_AFTER = "acode_login_retry_after"


class RateLimitedLoginMixin:
    """An authentication form that refuses attempts over the login rate limit."""

    request: HttpRequest | None
    cleaned_data: dict[str, Any]
    retry_after: int | None = None

    def clean(self) -> dict[str, Any]:
        if self.request is not None:
            username = str(self.cleaned_data.get("username") or "")
            self.retry_after = login_retry_after(self.request, username=username)
            if self.retry_after is not None:
                setattr(self.request, _RETRY_AFTER, self.retry_after)
                raise ValidationError(
                    "Too many login attempts. Try again in %(seconds)d seconds.",
                    code="rate_limited",
                    params={"seconds": self.retry_after},
                )
        return super().clean()  # type: ignore[misc]


class RateLimitedAuthenticationForm(RateLimitedLoginMixin, AuthenticationForm):
    """The dashboard's login form."""


class RateLimitedAdminAuthenticationForm(RateLimitedLoginMixin, AdminAuthenticationForm):
    """The admin's login form."""


def rate_limited_login(
    view: Callable[..., HttpResponseBase],
) -> Callable[..., HttpResponseBase]:
    """Answer 429 with Retry-After when the view's form refused a rate-limited attempt."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = view(request, *args, **kwargs)
        retry_after = getattr(request, _RETRY_AFTER, None)
        if retry_after is not None:
            response.status_code = 429
            response["Retry-After"] = str(retry_after)
        return response

    return wrapped
