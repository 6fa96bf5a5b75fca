"""Live events, published to Channels groups. Services call these from
``transaction.on_commit``, so nobody hears of a change that did not commit.

The layer's own ``group_send`` runs on one long-lived event loop on a background thread
(channels-redis pools its connections per event loop), in publication order, so the
caller never waits for Redis. The in-memory layer (one process, no Redis) is sent inline.
A failure to publish is logged and never undoes or hides the change: pages resynchronise
from the database when their websocket reconnects.

Every kind published here is an :class:`EventKind` of the catalog
(``sessions_app.services.event_catalog``), which says what each one re-renders.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
from concurrent.futures import Future
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

from sessions_app.services.event_catalog import EventKind, catalogued

logger = logging.getLogger(__name__)

BOARD_GROUP = "acode-board"
# Every open board, session page and roles page: what they show of roles can change.
ROLES_GROUP = "acode-roles"


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


publisher = _Publisher()


Sends = list[tuple[str, dict[str, Any]]]


def _send(sends: Sends) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    if isinstance(layer, InMemoryChannelLayer):
        try:
            for group, message in sends:
                async_to_sync(layer.group_send)(group, message)
        except Exception as exc:
            logger.warning("live push skipped: could not publish live events: %r", exc)
        return
    publisher.submit(layer, sends)


def publish_session_event(
    session_id: uuid.UUID | str, kind: EventKind, data: dict[str, Any] | None = None
) -> None:
    """Tell the session's group and the board that something changed in a session.

    Consumers re-render from the database, so the message carries only what changed;
    a lost message is repaired by the page's resync on reconnect. A kind the catalog
    lacks is a programming error (ValueError): nobody would know what it re-renders.
    """
    message = {
        "type": "session.event",
        "kind": str(catalogued(kind)),
        "session": str(session_id),
        "data": data or {},
    }
    _send([(session_group(session_id), message), (BOARD_GROUP, message)])


def publish_job_event(
    session_id: uuid.UUID | str, job_id: uuid.UUID | str, seq: int, kind: str, data: dict[str, Any]
) -> None:
    """Push one job event to the session's group (the session page's live job stream)."""
    message = {
        "type": EventKind.JOB_EVENT.value,
        "session": str(session_id),
        "job": str(job_id),
        "seq": seq,
        "kind": kind,
        "data": data,
    }
    sends = [(session_group(session_id), message)]
    if kind == "status":
        board = {**message, "type": "session.event", "kind": EventKind.JOB_STATUS.value}
        sends.append((BOARD_GROUP, board))
    _send(sends)


def publish_roles_event() -> None:
    """Tell every open page that shows roles (the board, session pages, the roles page)
    that role data changed: a role, tool, permission, transition rule or prompt.

    Sent once per committed transaction that wrote role data, whatever wrote it (admin,
    API, CLI, YAML import); each page re-renders, for its own user, from the registry.
    """
    kind = EventKind.ROLES_CHANGED.value
    _send([(ROLES_GROUP, {"type": kind, "kind": kind})])
