"""Whether the Celery broker answers now: one Redis PING on a cached client.

Asked before a person's new run or job is accepted, so that a start refused for a broker
that is away writes nothing (see ``sessions_app.services.jobs.require_broker``). Tasks that
run eagerly (no broker) and brokers that are not Redis are not asked.
This module imports neither app: the project package stays below them.
"""

from __future__ import annotations

import logging
import threading

import redis

logger = logging.getLogger(__name__)

TIMEOUT_SECONDS = 2.0
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")

_clients: dict[str, redis.Redis] = {}
_clients_lock = threading.Lock()


def _client(url: str) -> redis.Redis:
    with _clients_lock:
        if url not in _clients:
            _clients[url] = redis.Redis.from_url(
                url, socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS
            )
        return _clients[url]


def broker_reachable() -> bool:
    """True unless the broker is a Redis that does not answer a PING right now."""
    from acode.celery import app  # late: acode.celery imports Django settings

    if app.conf.task_always_eager:
        return True
    url = str(app.conf.broker_url or "")
    if not url.startswith(REDIS_SCHEMES):
        return True
    try:
        _client(url).ping()
    except redis.RedisError as exc:
        logger.warning("the task queue (broker) does not answer: %s", exc)
        return False
    return True
