"""Live events: published to Channels groups after the change that caused them commits."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

BOARD_GROUP = "acode-board"


def session_group(session_id: uuid.UUID | str) -> str:
    return f"acode-session-{session_id}"


def publish_session_event(
    session_id: uuid.UUID | str, kind: str, data: dict[str, Any] | None = None
) -> None:
    """Tell the session's group and the board that something changed in a session.

    Consumers re-render from the database, so the message carries only what changed;
    a lost message is repaired by the page's resync on reconnect.
    """
    layer = get_channel_layer()
    if layer is None:
        return
    message = {
        "type": "session.event",
        "kind": kind,
        "session": str(session_id),
        "data": data or {},
    }
    try:
        async_to_sync(layer.group_send)(session_group(session_id), message)
        async_to_sync(layer.group_send)(BOARD_GROUP, message)
    except Exception:  # the change is committed; a push failure must not undo or hide it
        logger.exception("could not publish %s for session %s", kind, session_id)


def publish_job_event(
    session_id: uuid.UUID | str, job_id: uuid.UUID | str, seq: int, kind: str, data: dict[str, Any]
) -> None:
    """Push one job event to the session's group (the session page's live job stream)."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {
        "type": "job.event",
        "session": str(session_id),
        "job": str(job_id),
        "seq": seq,
        "kind": kind,
        "data": data,
    }
    try:
        async_to_sync(layer.group_send)(session_group(session_id), message)
        if kind == "status":
            async_to_sync(layer.group_send)(
                BOARD_GROUP, {**message, "type": "session.event", "kind": "job.status"}
            )
    except Exception:
        logger.exception("could not publish job event for %s", job_id)
