"""Project-level probes: liveness (``/healthz``) and readiness (``/readyz``).

The checks are listed in ``acode.readiness``: the project's own, and those each app
registers from its ``AppConfig.ready()``, so this module imports no app.

Anonymous callers learn only ``ok`` or not, per check; staff also get the reasons.
"""

from __future__ import annotations

import logging

from django.http import HttpRequest, JsonResponse

from acode.readiness import CHECKS

logger = logging.getLogger(__name__)


def health(request: HttpRequest) -> JsonResponse:
    """The process is up and answers."""
    return JsonResponse({"status": "ok"})


def ready(request: HttpRequest) -> JsonResponse:
    """Whether this process can serve: every check in ``acode.readiness`` (database,
    Redis, and what the apps registered: the command sandbox, a live worker on every queue
    a role routes jobs to)."""
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
