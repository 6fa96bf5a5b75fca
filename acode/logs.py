"""Log lines as JSON objects (or readable console lines) carrying what they are about.

Every line, whether it comes from ``structlog`` or from a plain ``logging.getLogger``
(Django, Celery, uvicorn, our code), goes through one :class:`ProcessorFormatter` and
gets ``timestamp``, ``level``, ``logger`` and ``message``, plus the context keys bound
with ``structlog.contextvars`` while it was written: ``request_id`` (web requests),
``session`` and ``role`` (a request about a session, its run or job; an agent job, with
``job``). A line outside any session says ``role=-`` and ``session=-`` (spec FR-070: the
current role is in every log line).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from typing import Any

import structlog
from structlog.stdlib import ProcessorFormatter
from structlog.typing import EventDict, Processor, WrappedLogger

LOG_FORMATS = ("json", "console")


def default_log_format() -> str:
    """Readable lines for a person at a terminal (``make run``), JSON everywhere else."""
    return "console" if sys.stderr.isatty() else "json"


def _request_context(logger: WrappedLogger, method: str, event: EventDict) -> EventDict:
    """Django logs a failed request (``django.request``) after every middleware has run,
    so the request's bound context is gone by then: take its id from the record."""
    record = event.get("_record")
    request = getattr(record, "request", None)
    request_id = getattr(request, "request_id", "")
    if request_id:
        event.setdefault("request_id", request_id)
    status = getattr(record, "status_code", None)
    if isinstance(status, int):
        event.setdefault("status_code", status)
    return event


def _outside_session(logger: WrappedLogger, method: str, event: EventDict) -> EventDict:
    """A line written outside any session still has the keys: ``-``."""
    event.setdefault("role", "-")
    event.setdefault("session", "-")
    return event


_SHARED: list[Processor] = [
    structlog.contextvars.merge_contextvars,
    _outside_session,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
]


def formatter(kind: str = "json") -> ProcessorFormatter:
    """The formatter of every handler: ``json`` (one object a line) or ``console``."""
    if kind not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, got {kind!r}")
    renderer: list[Processor]
    if kind == "json":
        renderer = [
            structlog.processors.format_exc_info,
            structlog.processors.EventRenamer("message"),
            structlog.processors.JSONRenderer(),
        ]
    else:
        renderer = [structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())]
    return ProcessorFormatter(
        foreign_pre_chain=[_request_context, *_SHARED],
        processors=[ProcessorFormatter.remove_processors_meta, *renderer],
    )


class RoutineTasks(logging.Filter):
    """Leaves out Celery's info lines about the periodic housekeeping tasks (``tasks``, the
    beat schedule's): beat sending one, the worker receiving it, it succeeding. The backlog's
    tick alone wrote about 36 of them a minute, which buried the login ``make run`` prints.
    What those tasks log themselves, and every warning and error, stays; so does everything
    under ``ACODE_LOG_LEVEL=DEBUG``."""

    def __init__(self, tasks: Iterable[str] = ()) -> None:
        super().__init__()
        self.tasks = tuple(tasks)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING or not record.name.startswith("celery."):
            return True
        if logging.getLogger().getEffectiveLevel() <= logging.DEBUG:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed line is the formatter's to report, not ours to drop
            return True
        return not any(task in message for task in self.tasks)


def configure_structlog() -> None:
    """Send ``structlog`` loggers through the standard library, to the same handlers."""
    structlog.configure(
        processors=[
            *_SHARED,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.processors.StackInfoRenderer(),
            ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def bind_log_context(**values: Any) -> dict[str, Any]:
    """Bind context keys for the lines to come; pass the result to :func:`restore_log_context`."""
    previous = structlog.contextvars.get_contextvars()
    structlog.contextvars.bind_contextvars(**values)
    return previous


def restore_log_context(previous: dict[str, Any]) -> None:
    """Put the context back as it was before :func:`bind_log_context`."""
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(**previous)
