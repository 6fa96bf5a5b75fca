"""Small project-level views."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse

from roles.registry import registry


def health(request: HttpRequest) -> JsonResponse:
    """Liveness plus the basics an operator checks first."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok", "registry": registry.describe()})
