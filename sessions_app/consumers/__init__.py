"""Websockets of the dashboard (``pages``) and what keeps their pushes cheap (``hub``)."""

from __future__ import annotations

from sessions_app.consumers.backlog import BacklogConsumer
from sessions_app.consumers.hub import (
    GroupHub,
    GroupMember,
    SharedRenders,
    group_hub,
    shared_renders,
)
from sessions_app.consumers.pages import BoardConsumer, RolesConsumer, SessionConsumer

__all__ = [
    "BacklogConsumer",
    "BoardConsumer",
    "GroupHub",
    "GroupMember",
    "RolesConsumer",
    "SessionConsumer",
    "SharedRenders",
    "group_hub",
    "shared_renders",
]
