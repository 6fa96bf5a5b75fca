"""Redis-backed pieces: cache and channel layer. ``REDIS_URL`` is optional."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured

from acode.settings.base import PRODUCTION
from acode.settings.env import env_optional

REDIS_URL = env_optional("REDIS_URL")
if PRODUCTION and REDIS_URL is None:
    raise ImproperlyConfigured(
        "REDIS_URL must be set when ACODE_ENV=production: every web and worker process "
        "shares the cache, login rate limits, websocket groups and Celery through it"
    )

CACHES: dict[str, Any]
CHANNEL_LAYERS: dict[str, Any]
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "acode",
        },
        # Login attempt counters; a prefix of their own so they can be reset alone.
        "ratelimit": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "acode-ratelimit",
        },
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
    # One process only (embedded mode, tests): nothing to share.
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "ratelimit": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "acode-ratelimit",
        },
    }
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
