"""Live pushes through the channel layer, and the one push every app may schedule: "role
data changed, refresh open pages".

In the project package, below both apps, because both write role data's live event: the
roles app's services and its model hooks schedule it (``roles_changed_on_commit``), the
sessions app's consumers join its group (``ROLES_GROUP``) and its services publish their
own events through ``send``. It is the channel layer's plumbing, no app's domain.

The layer's own ``group_send`` runs on one long-lived event loop on a background thread
(channels-redis pools its connections per event loop), in publication order, so the
caller never waits for Redis. The in-memory layer (one process, no Redis) is sent inline.
A failure to publish is logged and never undoes or hides the change: pages resynchronise
from the database when their websocket reconnects. ``send_coalesced`` tells a burst of
the same "this changed" once per window (an outside agent's back-to-back hook events):
each push costs the process's next request time, the pages need only the last.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)

# Every open board, session page and roles page: what they show of roles can change.
ROLES_GROUP = "acode-roles"
# The kind on the wire (the sessions app's catalog lists it as EventKind.ROLES_CHANGED).
ROLES_CHANGED = "roles.changed"


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
                except Exception as exc:  # a push failure must not undo or hide the change
                    # A warning, not a traceback per event: while Redis is down every push
                    # fails the same way, and pages resynchronise when it is back.
                    logger.warning(
                        "live push skipped: could not publish %s to %s: %r",
                        message.get("type"),
                        group,
                        exc,
                    )

        with self._lock:
            self._last = asyncio.run_coroutine_threadsafe(send_all(), loop)

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> None:
        """Run ``callback(*args)`` on the publisher's thread in ``delay`` seconds."""
        loop = self._ensure_loop()
        loop.call_soon_threadsafe(loop.call_later, delay, callback, *args)


publisher = _Publisher()


Sends = list[tuple[str, dict[str, Any]]]


def send(sends: Sends) -> None:
    """Hand messages to the channel layer, in order: ``[(group, message), ...]``."""
    layer = get_channel_layer()
    if layer is None:
        return
    if isinstance(layer, InMemoryChannelLayer):

        async def send_all() -> None:
            for group, message in sends:
                await layer.group_send(group, message)

        try:  # one hop into async for all of them: each hop starts a thread
            async_to_sync(send_all)()
        except Exception as exc:
            logger.warning("live push skipped: could not publish live events: %r", exc)
        return
    publisher.submit(layer, sends)


class _Coalescer:
    """At most one send per key and window: the first at once, the later ones of the
    window as one (the latest) when it closes, which opens the next window. Pages re-read
    the database on each message, so the last "this changed" of a burst is all they need.

    A window whose close never came (a forked child's timers stayed with its parent) is
    taken as closed after four windows' time, so no key goes quiet for good."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, tuple[float, Sends | None]] = {}

    def send(self, key: str, sends: Sends, within: float) -> None:
        now = time.monotonic()
        with self._lock:
            opened = self._open.get(key)
            if opened is not None and now - opened[0] < within * 4:
                self._open[key] = (opened[0], sends)
                return
            self._open[key] = (now, None)
        send(sends)
        publisher.call_later(within, self._close, key, within)

    def _close(self, key: str, within: float) -> None:
        with self._lock:
            opened = self._open.pop(key, None)
            if opened is None or opened[1] is None:
                return
            self._open[key] = (time.monotonic(), None)
        send(opened[1])
        publisher.call_later(within, self._close, key, within)


_coalescer = _Coalescer()


def send_coalesced(key: str, sends: Sends, *, within: float) -> None:
    """``send``, at most once per ``within`` seconds for ``key`` (the first at once, the
    latest of the rest when the time is up): for messages that only say what changed, where
    a burst needs telling once. Without Redis (one process) it is ``send``."""
    layer = get_channel_layer()
    if within <= 0 or layer is None or isinstance(layer, InMemoryChannelLayer):
        send(sends)
        return
    _coalescer.send(key, sends, within)


def publish_roles_event() -> None:
    """Tell every open page that shows roles (the board, session pages, the roles page)
    that role data changed: a role, tool, permission, transition rule or prompt. Each page
    re-renders, for its own user, from the registry."""
    send([(ROLES_GROUP, {"type": ROLES_CHANGED, "kind": ROLES_CHANGED})])


class _Push:
    """One scheduled ``roles.changed`` push, shared by every write of one transaction."""

    done = False


_pending = threading.local()  # per thread, like Django's connections


def _publish_once(push: _Push) -> None:
    if push.done:
        return
    push.done = True
    publish_roles_event()


def roles_changed_on_commit() -> None:
    """Schedule ``publish_roles_event`` for when the current transaction commits (at once
    outside one): one push per committed transaction, however many rows it writes (a role
    saved in admin writes the role, its permissions, its tools and a new version), none
    for one that rolls back, whatever wrote it (a service, admin, the shell).

    Every write hands the transaction a callback; the callbacks of one transaction share
    one push, and the first that runs sends it. A rolled-back transaction drops its
    callbacks, so its unsent push is taken over by the next transaction's writes.
    """
    push: _Push | None = getattr(_pending, "push", None)
    if push is None or push.done:
        push = _pending.push = _Push()
    # Robust: the change is committed, a failed push must never fail its request.
    transaction.on_commit(partial(_publish_once, push), robust=True)
