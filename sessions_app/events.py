"""Live events: published to Channels groups after the change that caused them commits.

With channels-redis's ``RedisChannelLayer`` (production), messages are written inline by
``acode.fanout.GroupSender``: synchronous and pipelined, one Redis round trip for all the
groups of an event when nobody is listening and two when someone is. Other Redis layers
go through the layer's own coroutines on one long-lived event loop on a background
thread (channels-redis pools connections per event loop), in publication order. The
in-memory layer (single-process development and tests without Redis) is sent inline.
A failure to publish is logged and never undoes or hides the change.

During an HTTP request (``PublishAfterResponseMiddleware``), events are held until the
response has been sent: the server closes the response after its last byte, and that is
when they go out, in order. The client that made the change does not wait for Redis,
and listeners still hear of nothing that has not committed. Outside a request (Celery
workers, management commands, the shell) they go out as soon as they are published.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.http import HttpRequest, HttpResponseBase

from acode.fanout import sender_for

logger = logging.getLogger(__name__)

BOARD_GROUP = "acode-board"


def session_group(session_id: uuid.UUID | str) -> str:
    return f"acode-session-{session_id}"


class _Publisher:
    """One event loop thread per process, sending group messages in order."""

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._last: Future[None] | None = None

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if (
            self._pid != os.getpid()
        ):  # forked (e.g. a prefork worker child): the thread stayed behind
            self.__init__()  # type: ignore[misc]
        with self._lock:
            if self._loop is None or not self._loop.is_running():
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                threading.Thread(target=run, name="acode-publisher", daemon=True).start()
                ready.wait(5)
                self._loop = loop
            return self._loop

    def submit(self, layer: Any, sends: list[tuple[str, dict[str, Any]]]) -> None:
        loop = self._ensure_loop()
        previous = self._last

        async def send_all() -> None:
            if previous is not None:  # keep publication order across submissions
                await asyncio.wrap_future(previous)
            for group, message in sends:
                try:
                    await layer.group_send(group, message)
                except Exception:  # a push failure must not undo or hide the change
                    logger.exception("could not publish %s to %s", message.get("type"), group)

        with self._lock:
            self._last = asyncio.run_coroutine_threadsafe(send_all(), loop)

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until everything submitted so far was sent (tests, shutdown)."""
        last = self._last
        if last is not None:
            last.result(timeout=timeout)


publisher = _Publisher()


Sends = list[tuple[str, dict[str, Any]]]

# Set while a request's view runs: events published then wait for the response to close.
_held: contextvars.ContextVar[list[Sends] | None] = contextvars.ContextVar(
    "acode_events_held", default=None
)


class PublishAfterResponseMiddleware:
    """Hold the request's live events until its response has been sent (closed)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        held: list[Sends] = []
        token = _held.set(held)
        try:
            response = self.get_response(request)
        except BaseException:
            _held.reset(token)
            _send_all(held)
            raise
        _held.reset(token)
        if held:
            close = response.close

            def close_then_publish() -> None:
                # Servers close a response after sending it (PEP 3333; Django's ASGI
                # handler and test client too), even when the client went away.
                try:
                    close()
                finally:
                    _send_all(held)

            response.close = close_then_publish  # type: ignore[method-assign]
        return response


def _send_all(held: list[Sends]) -> None:
    for sends in held:
        _send(sends)
    held.clear()


def _publish(sends: Sends) -> None:
    held = _held.get()
    if held is not None:
        held.append(sends)
    else:
        _send(sends)


def _send(sends: Sends) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    if isinstance(layer, InMemoryChannelLayer):
        try:
            for group, message in sends:
                async_to_sync(layer.group_send)(group, message)
        except Exception:
            logger.exception("could not publish live events")
        return
    sender = sender_for(layer)
    if sender is None:
        publisher.submit(layer, sends)
        return
    try:
        sender.send(sends)
    except Exception:
        logger.exception("could not publish live events")


def publish_session_event(
    session_id: uuid.UUID | str, kind: str, data: dict[str, Any] | None = None
) -> None:
    """Tell the session's group and the board that something changed in a session.

    Consumers re-render from the database, so the message carries only what changed;
    a lost message is repaired by the page's resync on reconnect.
    """
    message = {
        "type": "session.event",
        "kind": kind,
        "session": str(session_id),
        "data": data or {},
    }
    _publish([(session_group(session_id), message), (BOARD_GROUP, message)])


def publish_job_event(
    session_id: uuid.UUID | str, job_id: uuid.UUID | str, seq: int, kind: str, data: dict[str, Any]
) -> None:
    """Push one job event to the session's group (the session page's live job stream)."""
    message = {
        "type": "job.event",
        "session": str(session_id),
        "job": str(job_id),
        "seq": seq,
        "kind": kind,
        "data": data,
    }
    sends = [(session_group(session_id), message)]
    if kind == "status":
        sends.append((BOARD_GROUP, {**message, "type": "session.event", "kind": "job.status"}))
    _publish(sends)
