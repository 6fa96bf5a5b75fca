"""Logs and metrics: JSON log lines with request and job context, and who may read /metrics."""

from __future__ import annotations

import ipaddress
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from acode import logs
from acode.settings.base import PRODUCTION
from acode.settings.celery import CELERY_BEAT_SCHEDULE
from acode.settings.env import env_int, env_list, env_optional, env_str

# json: one JSON object a line, always the default under ACODE_ENV=production. console:
# readable lines, the development default when stderr is a terminal (a developer watching
# `make run`); JSON otherwise (tests, services, pipes to a log collector).
_default_format = "json" if PRODUCTION else logs.default_log_format()
ACODE_LOG_FORMAT = env_str("ACODE_LOG_FORMAT", _default_format).strip().lower()
if ACODE_LOG_FORMAT not in logs.LOG_FORMATS:
    raise ImproperlyConfigured(
        f"ACODE_LOG_FORMAT must be one of {', '.join(logs.LOG_FORMATS)}, got {ACODE_LOG_FORMAT!r}"
    )
logs.configure_structlog()

# The servers' own loggers: handed to the root handler, so their lines are JSON too
# (uvicorn configures its own handlers before it loads Django).
_SERVER_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "daphne")

LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"acode": {"()": "acode.logs.formatter", "kind": ACODE_LOG_FORMAT}},
    "filters": {
        "routine": {
            "()": "acode.logs.RoutineTasks",
            "tasks": [entry["task"] for entry in CELERY_BEAT_SCHEDULE.values()],
        }
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "acode", "filters": ["routine"]}
    },
    "root": {"handlers": ["console"], "level": env_str("ACODE_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        **{name: {"handlers": [], "propagate": True} for name in _SERVER_LOGGERS},
    },
}

# /metrics answers these client addresses (or networks), staff users, and the bearer token.
ACODE_METRICS_ALLOWED_IPS = env_list("ACODE_METRICS_ALLOWED_IPS", ["127.0.0.1", "::1"])
for _network in ACODE_METRICS_ALLOWED_IPS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as _exc:
        raise ImproperlyConfigured(
            f"ACODE_METRICS_ALLOWED_IPS must list IP addresses or networks: {_exc}"
        ) from _exc
ACODE_METRICS_TOKEN = env_optional("ACODE_METRICS_TOKEN")
# A Celery worker serves its own metrics on this port when set (0: not served).
ACODE_WORKER_METRICS_PORT = env_int("ACODE_WORKER_METRICS_PORT", 0)
ACODE_WORKER_METRICS_ADDR = env_str("ACODE_WORKER_METRICS_ADDR", "127.0.0.1")
