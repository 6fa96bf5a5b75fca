"""Redis-backed pieces: cache and channel layer. ``REDIS_URL`` is optional."""

from __future__ import annotations

from typing import Any

from acode.settings.env import env_optional

REDIS_URL = env_optional("REDIS_URL")

CACHES: dict[str, Any]
CHANNEL_LAYERS: dict[str, Any]
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "acode",
        }
    }
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # redis-py 8 times reads out after 5 s, as long as channels-redis blocks on
                # a receive, which closed idle websockets; and it refuses a 101st pooled
                # connection instead of waiting, which 200 dashboards reach.
                "hosts": [{"address": REDIS_URL, "socket_timeout": 30, "max_connections": 1000}],
                "prefix": "acode",
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
