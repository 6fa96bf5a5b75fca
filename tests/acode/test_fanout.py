"""acode.fanout against a real Redis: what channels-redis receivers get is what the layer's
own group_send would give them."""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from typing import Any

import pytest
import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels_redis.core import RedisChannelLayer
from channels_redis.pubsub import RedisPubSubChannelLayer

from acode.embedded import free_port
from acode.fanout import GroupSender, sender_for
from sessions_app import services

REDIS_URL = os.environ.get("REDIS_URL", "")
pytestmark = pytest.mark.skipif(not REDIS_URL, reason="needs REDIS_URL (make test sets it)")


def make_layer(**config: Any) -> RedisChannelLayer:
    # A prefix of its own, so nothing else on this Redis is touched or seen.
    return RedisChannelLayer(
        hosts=[{"address": REDIS_URL}], prefix=f"fanout-{uuid.uuid4().hex[:8]}", **config
    )


async def drain(layer: RedisChannelLayer, channel: str, within: float = 0.3) -> list[Any]:
    """Every message waiting on ``channel`` (stops after ``within`` seconds of silence)."""
    messages = []
    while True:
        try:
            messages.append(await asyncio.wait_for(layer.receive(channel), within))
        except TimeoutError:
            return messages


def test_members_of_each_group_receive_its_message_in_order() -> None:
    layer = make_layer()

    async def body() -> None:
        both = await layer.new_channel()  # process-local name, like a consumer's
        board_only = await layer.new_channel()
        await layer.group_add("session-1", both)
        await layer.group_add("board", both)
        await layer.group_add("board", board_only)
        GroupSender(layer).send(
            [
                ("session-1", {"type": "session.event", "n": 1}),
                ("board", {"type": "session.event", "n": 2}),
                ("nobody-listens", {"type": "session.event", "n": 3}),
            ]
        )
        assert [m["n"] for m in await drain(layer, both)] == [1, 2]
        assert [m["n"] for m in await drain(layer, board_only)] == [2]
        await layer.flush()

    async_to_sync(body)()


def test_same_result_as_the_layers_own_group_send() -> None:
    layer = make_layer()

    async def body() -> None:
        channel = await layer.new_channel()
        await layer.group_add("g", channel)
        await layer.group_send("g", {"type": "x.y", "via": "layer"})
        GroupSender(layer).send([("g", {"type": "x.y", "via": "sender"})])
        received = await drain(layer, channel)
        assert received == [{"type": "x.y", "via": "layer"}, {"type": "x.y", "via": "sender"}]
        await layer.flush()

    async_to_sync(body)()


def test_capacity_and_group_expiry_are_the_layers() -> None:
    layer = make_layer(capacity=2, group_expiry=60)
    client = redis.Redis.from_url(REDIS_URL)

    async def body() -> None:
        channel = await layer.new_channel()
        gone = await layer.new_channel()
        await layer.group_add("g", channel)
        # A member that joined long ago and never renewed: expired, as the layer sees it.
        client.zadd(layer._group_key("g"), {gone: time.time() - 3600})
        sender = GroupSender(layer)
        for n in range(4):  # over capacity: extra messages are dropped, nothing raises
            sender.send([("g", {"type": "x.y", "n": n})])
        assert [m["n"] for m in await drain(layer, channel)] == [0, 1]
        assert client.zscore(layer._group_key("g"), gone) is None
        await layer.flush()

    async_to_sync(body)()


def test_only_plain_redis_layers_with_addresses_get_a_sender() -> None:
    assert isinstance(sender_for(make_layer()), GroupSender)
    sentinel = RedisChannelLayer(
        hosts=[{"master_name": "m", "sentinels": [("127.0.0.1", 26379)]}], prefix="x"
    )
    assert sender_for(sentinel) is None
    assert sender_for(RedisPubSubChannelLayer(hosts=[REDIS_URL])) is None


@pytest.mark.django_db
def test_a_role_change_stands_when_its_event_cannot_reach_redis(
    settings: Any,
    user: Any,
    caplog: pytest.LogCaptureFixture,
    django_capture_on_commit_callbacks: Any,
) -> None:
    session = services.session_create(owner=user, title="Redis down")
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [f"redis://127.0.0.1:{free_port()}/0"]},  # nothing listens
        }
    }
    assert isinstance(sender_for(get_channel_layer()), GroupSender)
    start = time.monotonic()
    with (
        caplog.at_level(logging.ERROR, logger="sessions_app.events"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        result = services.session_transition(
            session=session, to_role="planner", reason="plan it", user=user
        )
    assert time.monotonic() - start < 3
    assert result.changed
    assert "could not publish live events" in caplog.text
    session.refresh_from_db()
    assert session.current_role.slug == "planner"
