"""Group messages for channels-redis's ``RedisChannelLayer``, sent synchronously and batched.

The layer's own ``group_send`` is a coroutine that makes two round trips per group on an
asyncio Redis client. A role change goes to two groups (the session's and the board), so
a web thread either blocks on an event loop or hands the work to a loop thread; both cost
more CPU than the change itself (bench/transitions.py). ``GroupSender`` writes exactly
what ``group_send`` writes, with the layer's own key names, hashing, serializer,
capacities and expiries, on redis-py's synchronous client: one pipelined round trip per
Redis host to read every group's members, and one more per host to deliver, only when a
group has members.

It relies on internals of channels-redis 4.2 and 4.3 (``_group_key``,
``_map_channel_keys_to_connection``, the group-send Lua script), so pyproject pins that
range and ``tests/acode/test_fanout.py`` checks a real receiver against the layer's own
``group_send``. ``sender_for`` returns None for anything else (sentinel hosts, another
layer class), and callers then use the layer's own API.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from typing import Any

import redis
from channels_redis.core import RedisChannelLayer

logger = logging.getLogger(__name__)

# channels-redis's script from RedisChannelLayer.group_send, unchanged: add the message to
# every channel key that is under its capacity and refresh the key's expiry.
GROUP_SEND_LUA = """
    local over_capacity = 0
    local current_time = ARGV[#ARGV - 1]
    local expiry = ARGV[#ARGV]
    for i=1,#KEYS do
        if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[i + #KEYS]) then
            redis.call('ZADD', KEYS[i], current_time, ARGV[i])
            redis.call('EXPIRE', KEYS[i], expiry)
        else
            over_capacity = over_capacity + 1
        end
    end
    return over_capacity
"""

# A publisher must not hold a request for long when Redis is unreachable.
SOCKET_TIMEOUT = 2.0


class GroupSender:
    """Sends ``(group, message)`` pairs the way ``RedisChannelLayer.group_send`` does."""

    def __init__(self, layer: RedisChannelLayer) -> None:
        self.layer = layer
        self.clients: list[redis.Redis] = []
        for host in layer.hosts:
            options = {
                **host,
                "socket_timeout": SOCKET_TIMEOUT,
                "socket_connect_timeout": SOCKET_TIMEOUT,
            }
            address = options.pop("address", None)
            pool = (
                redis.ConnectionPool.from_url(address, **options)
                if address
                else redis.ConnectionPool(**options)
            )
            self.clients.append(redis.Redis(connection_pool=pool))

    def send(self, sends: list[tuple[str, dict[str, Any]]]) -> None:
        """Deliver each message to its group's current members, in the order given."""
        layer = self.layer
        for group, _ in sends:
            assert layer.require_valid_group_name(group), "Group name not valid"
        # Round trip 1, per host: drop expired members of each group, then list them.
        by_host: dict[int, list[int]] = defaultdict(list)
        for i, (group, _) in enumerate(sends):
            by_host[layer.consistent_hash(group)].append(i)
        members: list[list[str]] = [[] for _ in sends]
        now = int(time.time())
        for index, positions in by_host.items():
            pipe = self.clients[index].pipeline(transaction=False)
            for i in positions:
                key = layer._group_key(sends[i][0])
                pipe.zremrangebyscore(key, min=0, max=now - layer.group_expiry)
                pipe.zrange(key, 0, -1)
            replies = pipe.execute()
            for n, i in enumerate(positions):
                members[i] = [name.decode("utf8") for name in replies[2 * n + 1]]
        # Round trip 2, per host that holds a member's channel: expire old messages, then
        # add the new one to every channel under capacity (one script call per group).
        deliveries: dict[int, tuple[Any, list[tuple[int, str]]]] = {}
        for (group, message), names in zip(sends, members, strict=True):
            if not names:
                continue
            channel_keys, payloads, capacities = layer._map_channel_keys_to_connection(
                names, message
            )
            for index, keys in channel_keys.items():
                if index not in deliveries:
                    deliveries[index] = (self.clients[index].pipeline(transaction=False), [])
                pipe, scripts = deliveries[index]
                for key in keys:
                    pipe.zremrangebyscore(key, min=0, max=int(time.time()) - int(layer.expiry))
                args = [payloads[k] for k in keys] + [capacities[k] for k in keys]
                pipe.eval(GROUP_SEND_LUA, len(keys), *keys, *args, time.time(), layer.expiry)
                scripts.append((len(pipe), group))
        for pipe, scripts in deliveries.values():
            replies = pipe.execute()
            for position, group in scripts:
                if replies[position - 1]:
                    logger.info(
                        "%s channels over capacity in group %s", replies[position - 1], group
                    )


def sender_for(layer: Any) -> GroupSender | None:
    """A ``GroupSender`` for this layer if it is a plain ``RedisChannelLayer``, else None."""
    if type(layer) is not RedisChannelLayer or any("address" not in h for h in layer.hosts):
        return None
    # Kept on the layer, so it lives and dies with it (channels keeps one layer per alias
    # and replaces it when the settings change).
    sender: GroupSender | None = getattr(layer, "_acode_group_sender", None)
    if sender is None:
        sender = layer._acode_group_sender = GroupSender(layer)
    return sender
