"""What ``/readyz`` checks: the project's own checks and those the apps register.

A check returns ``""`` when all is well, else the problem in a sentence (shown to staff).
The database and Redis are the project's; each app registers its own from its
``AppConfig.ready()`` (the sessions app: the command sandbox; roles: a live worker on every
queue a role routes jobs to), so the probe imports no app.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import connection

Check = Callable[[], str]

CHECKS: dict[str, Check] = {}


def readiness_register(name: str, check: Check) -> None:
    """Add (or replace) the readiness check ``name``; ``/readyz`` runs them in order."""
    CHECKS[name] = check


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


readiness_register("database", _database)
readiness_register("redis", _redis)
