"""Bring the role registry up to date at the start of every request (one indexed read)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from roles.registry import registry


class RegistrySyncMiddleware:
    """Sync the process's role registry so a change made anywhere is seen by this request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        registry.sync()
        return self.get_response(request)
