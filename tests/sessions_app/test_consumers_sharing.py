"""Sockets of one process share one rendering per event (never an older one) and one
group membership, which survives a failed read."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from sessions_app.consumers import GroupHub, GroupMember, SharedRenders
from sessions_app.consumers import hub as consumers_hub


def test_a_burst_shares_one_rendering_and_a_later_event_gets_a_new_one() -> None:
    calls: list[int] = []

    def render() -> str:
        calls.append(1)
        return f"render {len(calls)}"

    renders = SharedRenders()

    async def body() -> None:
        burst = await asyncio.gather(*(renders.get("k", render) for _ in range(50)))
        assert set(burst) == {"render 1"}
        # A later event must not get the earlier rendering.
        assert await renders.get("k", render) == "render 2"

    asyncio.run(body())
    assert len(calls) == 2


def test_sockets_woken_while_a_rendering_runs_share_the_next_one() -> None:
    started = threading.Event()
    release = threading.Event()
    calls: list[int] = []

    def render() -> str:
        calls.append(1)
        if len(calls) == 1:
            started.set()
            release.wait(5)
        return f"render {len(calls)}"

    renders = SharedRenders()

    async def body() -> None:
        first = asyncio.ensure_future(renders.get("k", render))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 5)
        # The first rendering has started its read: these may hold a later event.
        later = [asyncio.ensure_future(renders.get("k", render)) for _ in range(20)]
        await asyncio.sleep(0.05)
        release.set()
        assert await first == "render 1"
        assert set(await asyncio.gather(*later)) == {"render 2"}

    asyncio.run(body())
    assert len(calls) == 2


def test_a_later_rendering_is_skipped_when_nothing_was_committed_since() -> None:
    version = [1]
    calls: list[int] = []

    def render() -> str:
        calls.append(1)
        return f"render {len(calls)}"

    renders = SharedRenders(version=lambda: version[0])

    async def body() -> None:
        assert await renders.get("k", render) == "render 1"
        # The first repeat reads the version (the first rendering did not need to).
        assert await renders.get("k", render) == "render 2"
        # Same data version: the previous rendering is still exact.
        assert await renders.get("k", render) == "render 2"
        version[0] = 2  # something was committed
        assert await renders.get("k", render) == "render 3"
        assert await renders.get("other", render) == "render 4"

    asyncio.run(body())
    assert len(calls) == 4


class FlakyLayer:
    """A channel layer whose first read fails, as a Redis read that timed out does."""

    def __init__(self) -> None:
        self.reads = 0

    async def new_channel(self) -> str:
        return "hub-channel"

    async def group_add(self, group: str, channel: str) -> None:
        return None

    async def group_discard(self, group: str, channel: str) -> None:
        return None

    async def receive(self, channel: str) -> dict[str, Any]:
        self.reads += 1
        if self.reads == 1:
            raise ConnectionError("redis went away")
        await asyncio.sleep(3600)
        return {}


class Recorder(GroupMember):
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def group_message(self, message: dict[str, Any]) -> None:
        self.messages.append(message)


@pytest.mark.parametrize(("committed", "resynced"), [(True, True), (False, False)])
def test_a_failed_read_resynchronises_pages_if_anything_was_committed(
    monkeypatch: pytest.MonkeyPatch, committed: bool, resynced: bool
) -> None:
    versions = iter([(1, "a"), (2, "a") if committed else (1, "a")])
    monkeypatch.setattr(consumers_hub, "data_version", lambda: next(versions))
    monkeypatch.setattr(consumers_hub, "RETRY_SECONDS", 0)

    async def body() -> list[dict[str, Any]]:
        hub, member = GroupHub(), Recorder()
        await hub.join("g", member, FlakyLayer())
        await asyncio.sleep(0.2)
        await hub.leave("g", member)
        return member.messages

    messages = asyncio.run(body())
    assert messages == ([{"type": "dashboard.resync"}] if resynced else [])
