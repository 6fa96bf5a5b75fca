"""What keeps a push cheap with hundreds of open pages (``bench/push.py``):

- :class:`GroupHub`: a process joins each group once and hands every event to all its
  local sockets together, instead of each socket being a group member of its own (which
  costs the channel layer one Redis message and one wakeup per socket per event).
- :class:`SharedRenders`: fragments are the same for every socket that sees the same
  thing (the board of a team lead, a session page of someone who may act), so the
  sockets of a process share one rendering per event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from channels.db import database_sync_to_async

from sessions_app.dashboard.live import data_version

logger = logging.getLogger(__name__)

T = TypeVar("T")


class SharedRenders:
    """One rendering per event for every socket of this process that needs the same HTML.

    A socket asking for a key joins a rendering that has not started reading the
    database yet, else it queues a new one. Joining only before the read starts is what
    keeps it correct: the event a socket received was published after its change
    committed, so any read that starts later sees that change. Renderings run one at a
    time on the database thread, so while one runs, every socket woken by the same
    event joins the single rendering queued behind it.

    A rendering that finds one of the same key from moments ago first reads the data
    version (one small query): if nothing was committed since that one read it, its HTML
    is still exact and is reused (a reconnect storm renders once, not once per page).
    """

    def __init__(self, version: Callable[[], Hashable] | None = None) -> None:
        self._version = version
        # The database thread closes a slot when its rendering starts: guarded by a lock.
        self._lock = threading.Lock()
        self._pending: dict[tuple[int, Hashable], asyncio.Future[Any]] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # held so they are not collected
        self._done: OrderedDict[tuple[int, Hashable], tuple[Hashable, float, Any]] = OrderedDict()

    async def get(self, key: Hashable, render: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        slot = (id(loop), key)
        with self._lock:
            future = self._pending.get(slot)
            if future is None:
                future = loop.create_future()
                self._pending[slot] = future
                task = loop.create_task(self._fill(slot, future, render))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        # shield: one socket going away must not cancel the rendering others wait for.
        return await asyncio.shield(future)

    def _start_and_render(
        self, slot: tuple[int, Hashable], future: asyncio.Future[Any], render: Callable[[], Any]
    ) -> Any:
        with self._lock:
            if self._pending.get(slot) is future:
                del self._pending[slot]
        if self._version is None:
            return render()
        now = time.monotonic()
        with self._lock:
            done = self._done.get(slot)
        version: Hashable = None
        if done is not None and now - done[1] < REUSE_SECONDS:
            # Only worth a query when there is a recent rendering to reuse.
            version = self._version()
            if done[0] is not None and done[0] == version:
                return done[2]
        result = render()
        with self._lock:
            self._done[slot] = (version, now, result)
            self._done.move_to_end(slot)
            while len(self._done) > REUSE_KEYS:
                self._done.popitem(last=False)
        return result

    async def _fill(
        self, slot: tuple[int, Hashable], future: asyncio.Future[Any], render: Callable[[], Any]
    ) -> None:
        try:
            result = await database_sync_to_async(self._start_and_render)(slot, future, render)
        except Exception as error:
            future.set_exception(error)
            # Retrieve it so an exception nobody awaited is not logged as "never retrieved".
            future.exception()
        else:
            future.set_result(result)


# A rendering is reused only within the burst of one event: times shown ("for 3m", the
# time-in-role bar) move on even when no data does.
REUSE_SECONDS = 2.0
REUSE_KEYS = 1024

shared_renders = SharedRenders(version=data_version)

# Keep a group subscription alive: channels-redis forgets members after its group_expiry
# (a day by default), so a hub that lives longer joins again now and then.
GROUP_REFRESH_SECONDS = 3600.0
# After the channel layer fails (Redis restarted, a read timed out), wait this long before
# reading again; local pages then resynchronise, as events may have been lost.
RETRY_SECONDS = 1.0


class GroupMember:
    """What the hub needs from a socket: a way to hand it one group message."""

    async def group_message(self, message: dict[str, Any]) -> None:
        raise NotImplementedError


class GroupHub:
    """One channel-layer subscription per group per process, fanned out to local sockets.

    The first local socket of a group makes the hub join it with a channel of its own
    and start reading; the last one to leave makes it leave. Messages are handed to the
    group's sockets one message at a time, all sockets together, so each socket sees
    events in order and their renderings coalesce.
    """

    def __init__(self) -> None:
        self._members: dict[str, set[GroupMember]] = {}
        self._readers: dict[str, tuple[Any, str, asyncio.Task[None]]] = {}
        self._lock = asyncio.Lock()

    async def join(self, group: str, member: GroupMember, layer: Any) -> None:
        async with self._lock:
            self._members.setdefault(group, set()).add(member)
            if group not in self._readers:
                channel = await layer.new_channel()
                await layer.group_add(group, channel)
                task = asyncio.create_task(self._read(group, layer, channel))
                self._readers[group] = (layer, channel, task)

    async def leave(self, group: str, member: GroupMember) -> None:
        async with self._lock:
            members = self._members.get(group, set())
            members.discard(member)
            if members:
                return
            self._members.pop(group, None)
            reader = self._readers.pop(group, None)
        if reader is not None:
            layer, channel, task = reader
            task.cancel()
            with contextlib.suppress(Exception):
                await layer.group_discard(group, channel)

    async def _read(self, group: str, layer: Any, channel: str) -> None:
        joined_at = time.monotonic()
        seen = await database_sync_to_async(data_version)()
        while True:
            try:
                if time.monotonic() - joined_at > GROUP_REFRESH_SECONDS:
                    await layer.group_add(group, channel)
                    joined_at = time.monotonic()
                message = await asyncio.wait_for(
                    layer.receive(channel), timeout=GROUP_REFRESH_SECONDS
                )
            except TimeoutError:
                continue
            except Exception as error:
                # A Redis read that timed out while idle is routine while redis-py's
                # default 5 s socket timeout equals channels-redis's 5 s blocking pop;
                # anything else is worth a traceback.
                if type(error).__name__ != "TimeoutError":
                    logger.exception("dashboard: reading group %s failed", group)
                    await asyncio.sleep(RETRY_SECONDS)
                    # Redis may have restarted and forgotten the group: join it again.
                    joined_at = float("-inf")
                # An event may have been lost: resynchronise the pages, unless nothing
                # was committed since the last look (events only follow commits).
                current = await database_sync_to_async(data_version)()
                if current == seen:
                    continue
                seen = current
                message = {"type": "dashboard.resync"}
            await self._deliver(group, message)

    async def _deliver(self, group: str, message: dict[str, Any]) -> None:
        members = list(self._members.get(group, ()))
        results = await asyncio.gather(
            *(member.group_message(message) for member in members), return_exceptions=True
        )
        for result in results:
            if isinstance(result, Exception):
                logger.error(
                    "dashboard: a socket failed on %s", message.get("type"), exc_info=result
                )


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, GroupHub] = weakref.WeakKeyDictionary()


def group_hub() -> GroupHub:
    """This event loop's hub (daphne runs one loop; tests run one per test)."""
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = GroupHub()
    return hub
