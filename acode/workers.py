"""Which Celery queues have a live consumer: a small registry of workers in Redis.

Each worker writes ``acode:worker:<hostname>`` (JSON: hostname, queues, pid, seen_at) when
it is ready and every ``HEARTBEAT_SECONDS`` after, with a TTL of ``TTL_SECONDS``, and
deletes it when it shuts down; a worker killed outright drops out when its key expires.
Job creation asks ``queue_has_consumer`` (cached briefly in-process, so it costs nothing
per job) and readiness asks ``queues_with_consumers``.

Without a broker (Celery runs tasks eagerly, in-process) every queue counts as consumed.
This module imports neither app: the project package stays below them.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

import redis
from django.conf import settings

if TYPE_CHECKING:
    from celery import Celery

logger = logging.getLogger(__name__)

KEY_PREFIX = "acode:worker:"
HEARTBEAT_SECONDS = 10.0
TTL_SECONDS = 30
CACHE_SECONDS = 2.0
# acode's Celery app, handed over by acode.celery (which imports this module, so this one
# does not import it back).
_celery: dict[str, Celery] = {}

_clients: dict[str, redis.Redis] = {}
_cache_lock = threading.Lock()
_cache: tuple[float, frozenset[str]] | None = None  # (monotonic time, queues) of the last read


def _redis_url() -> str | None:
    """Redis of the registry: ``REDIS_URL``, else the broker when it is a Redis."""
    url = getattr(settings, "REDIS_URL", None)
    if url:
        return str(url)
    broker = str(getattr(settings, "CELERY_BROKER_URL", "") or "")
    return broker if broker.startswith(("redis://", "rediss://", "unix://")) else None


def _client() -> redis.Redis | None:
    url = _redis_url()
    if url is None:
        return None
    if url not in _clients:
        _clients[url] = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
    return _clients[url]


def _runs_eagerly() -> bool:
    app = _celery.get("app")
    if app is None:  # no Celery app in this process: what the settings say
        return bool(getattr(settings, "CELERY_TASK_ALWAYS_EAGER", True))
    return bool(app.conf.task_always_eager)


def tracks_workers() -> bool:
    """Whether consumers can be missing at all: not when tasks run eagerly or without Redis."""
    return not _runs_eagerly() and _client() is not None


def worker_announce(
    *, hostname: str, queues: list[str], pid: int | None = None, ttl: float = TTL_SECONDS
) -> None:
    """Record (or refresh) a live worker and the queues it consumes, for ``ttl`` seconds."""
    client = _client()
    if client is None:
        return
    record = {
        "hostname": hostname,
        "queues": sorted(queues),
        "pid": pid if pid is not None else os.getpid(),
        "seen_at": time.time(),
    }
    client.set(KEY_PREFIX + hostname, json.dumps(record), px=max(1, int(ttl * 1000)))


def worker_forget(*, hostname: str) -> None:
    """A worker stopped: its queues lose this consumer at once, not when the TTL runs out."""
    client = _client()
    if client is not None:
        client.delete(KEY_PREFIX + hostname)


def live_workers() -> list[dict[str, Any]]:
    """Every worker whose key has not expired, sorted by hostname (Redis errors propagate)."""
    client = _client()
    if client is None:
        return []
    keys = sorted(client.scan_iter(match=KEY_PREFIX + "*", count=500))
    workers = []
    for raw in client.mget(keys) if keys else []:
        if raw is None:  # expired between SCAN and MGET
            continue
        try:
            workers.append(json.loads(raw))
        except ValueError:
            logger.warning("ignoring an unreadable worker record: %r", raw[:200])
    return sorted(workers, key=lambda w: str(w.get("hostname", "")))


def queues_with_consumers() -> set[str]:
    """The queues at least one live worker consumes (read from Redis each call)."""
    return {str(q) for worker in live_workers() for q in worker.get("queues", [])}


def queue_has_consumer(queue: str) -> bool:
    """Whether a live worker consumes ``queue``; True when no broker is used (eager tasks).

    Cached for ``CACHE_SECONDS`` per process, so creating jobs in a burst reads Redis once.
    When Redis cannot be read the answer is True: a guess must not warn about every job.
    """
    global _cache
    if not tracks_workers():
        return True
    now = time.monotonic()
    with _cache_lock:
        cached = _cache
    if cached is None or now - cached[0] > CACHE_SECONDS:
        try:
            cached = (now, frozenset(queues_with_consumers()))
        except redis.RedisError as exc:
            logger.warning("could not read the worker registry: %s", exc)
            return True
        with _cache_lock:
            _cache = cached
    return queue in cached[1]


def forget_cache() -> None:
    """Drop the cached answer (tests, and anything that just started or stopped a worker)."""
    global _cache
    with _cache_lock:
        _cache = None


# --- the worker side: Celery signals ---------------------------------------------------


class _Heartbeat(threading.Thread):
    """Refreshes this worker's key until the worker shuts down."""

    def __init__(self, consumer: Any) -> None:
        super().__init__(name="acode-worker-registry", daemon=True)
        self.consumer = consumer
        self.hostname = str(consumer.hostname)
        self.stopped = threading.Event()

    def queues(self) -> list[str]:
        # Re-read on every beat: `celery control add_consumer` changes them at run time.
        task_consumer = getattr(self.consumer, "task_consumer", None)
        if task_consumer is not None:
            return [q.name for q in task_consumer.queues]
        return list(self.consumer.app.amqp.queues.consume_from)

    def announce(self) -> None:
        try:
            worker_announce(hostname=self.hostname, queues=self.queues())
        except Exception as exc:  # the registry is advisory; the worker keeps working
            logger.warning("could not announce worker %s: %s", self.hostname, exc)

    def run(self) -> None:
        while not self.stopped.wait(HEARTBEAT_SECONDS):
            self.announce()


_heartbeat: _Heartbeat | None = None


def _on_worker_ready(sender: Any = None, **kwargs: Any) -> None:
    global _heartbeat
    if sender is None:
        return
    _heartbeat = _Heartbeat(sender)
    _heartbeat.announce()
    _heartbeat.start()


def _on_worker_shutdown(sender: Any = None, **kwargs: Any) -> None:
    global _heartbeat
    beat, _heartbeat = _heartbeat, None
    if beat is None:
        return
    beat.stopped.set()
    try:
        worker_forget(hostname=beat.hostname)
    except Exception as exc:  # the key expires anyway
        logger.warning("could not remove worker %s from the registry: %s", beat.hostname, exc)


def connect_worker_signals(app: Celery) -> None:
    """Announce this process in the registry while it runs as a Celery worker; ``app`` is
    acode's Celery app, whose configuration says whether tasks run eagerly."""
    _celery["app"] = app
    from celery.signals import worker_ready, worker_shutdown

    worker_ready.connect(_on_worker_ready, dispatch_uid="acode.workers.ready", weak=False)
    worker_shutdown.connect(_on_worker_shutdown, dispatch_uid="acode.workers.shutdown", weak=False)
