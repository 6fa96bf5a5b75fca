"""A session's live events, published to Channels groups through ``acode.live.send``.
Services call these from ``transaction.on_commit``, so nobody hears of a change that did
not commit. (Role data's own event, ``roles.changed``, is ``acode.live``'s: the roles app,
below this one, schedules it.)

Every kind published here is an :class:`EventKind` of the catalog
(``sessions_app.services.event_catalog``), which says what each one re-renders.
"""

from __future__ import annotations

import uuid
from typing import Any

from acode import live
from sessions_app.services.event_catalog import EventKind, catalogued

BOARD_GROUP = "acode-board"
# Every open board, session page and roles page joins it (published by acode.live).
ROLES_GROUP = live.ROLES_GROUP


def session_group(session_id: uuid.UUID | str) -> str:
    return f"acode-session-{session_id}"


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
    live.send([(session_group(session_id), message), (BOARD_GROUP, message)])


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
    live.send(sends)
