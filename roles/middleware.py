"""Bring the role registry up to date before every view runs (one indexed read)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

from roles.registry import registry


def syncs_registry_itself(view_class: type) -> type:
    """Mark a view class that brings the registry up to date in a query of its own
    (``roles.registry.stamp_column``, read with the row it decides on), so the middleware
    does not read the stamp a second time: for hot paths only (an outside agent's hook)."""
    view_class.syncs_registry_itself = True  # type: ignore[attr-defined]
    return view_class


class RegistrySyncMiddleware:
    """Sync the process's role registry so a change made anywhere is seen by this request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view_func: Callable[..., Any], *args: Any
    ) -> HttpResponse | None:
        view_class = getattr(view_func, "view_class", None) or getattr(view_func, "cls", None)
        if not getattr(view_class, "syncs_registry_itself", False):
            registry.sync()
        return None
