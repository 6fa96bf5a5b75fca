"""Project-level probes: liveness (``/healthz``) and readiness (``/readyz``).

The checks import the apps inside their bodies, so the project package stays below them.

Anonymous callers learn only ``ok`` or not, per check; staff also get the reasons.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

from acode.workers import queues_with_consumers, tracks_workers

logger = logging.getLogger(__name__)


def health(request: HttpRequest) -> JsonResponse:
    """The process is up and answers."""
    return JsonResponse({"status": "ok"})


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return ""


def _redis() -> str:
    url = getattr(settings, "REDIS_URL", None)
    if not url:
        return ""  # in-process layers: nothing to reach
    import redis

    redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2).ping()
    return ""


def _sandbox() -> str:
    from sessions_app.containment import sandbox_available, sandbox_required

    if not sandbox_required():
        return "ACODE_SANDBOX=off: agent commands run without the OS sandbox"
    status = sandbox_available()
    if not status.available:
        return status.reason
    return "" if status.overlay else status.overlay_reason


def _workers() -> str:
    from roles.registry import registry

    if not tracks_workers():
        return ""  # tasks run eagerly, in this process
    registry.sync()
    needed = {role.spec.queue for role in registry.list_roles() if role.spec.queue}
    missing = sorted(needed - queues_with_consumers())
    if missing:
        return f"no live worker consumes queue(s) {', '.join(missing)}: their jobs would wait"
    return ""


CHECKS: dict[str, Callable[[], str]] = {
    "database": _database,
    "redis": _redis,
    "sandbox": _sandbox,
    "workers": _workers,
}


def ready(request: HttpRequest) -> JsonResponse:
    """Whether this process can serve: database, Redis, the command sandbox, and a live
    worker on every queue a role routes jobs to."""
    results: dict[str, str] = {}
    for name, check in CHECKS.items():
        try:
            results[name] = check()
        except Exception as exc:  # a probe reports, it never fails the request
            logger.warning("readiness check %s failed: %s", name, exc)
            results[name] = f"{type(exc).__name__}: {exc}"
    ok = not any(results.values())
    body: dict[str, object] = {
        "status": "ready" if ok else "not ready",
        "checks": {name: not problem for name, problem in results.items()},
    }
    if request.user.is_staff:
        body["problems"] = {name: problem for name, problem in results.items() if problem}
    return JsonResponse(body, status=200 if ok else 503)
