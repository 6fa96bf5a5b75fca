"""The dashboard's websockets: the board, one per session, and the roles page.

A consumer checks access, joins its groups and, on every event, re-renders from the
database the same partial templates the pages use (the ones the event catalog,
``sessions_app.services.event_catalog``, names for the event's kind) and sends them;
htmx's ws extension swaps each fragment by the id on its root. On connect the consumer
sends every fragment, so a page that reconnects after missing events is current again.
Every page that shows roles also joins ``ROLES_GROUP``: a change to role data re-renders
all it shows.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from django.contrib.auth.models import User

from acode.metrics import WEBSOCKET_CLIENTS
from roles.registry import registry
from sessions_app.consumers.hub import GroupMember, group_hub, shared_renders
from sessions_app.dashboard.board import (
    BoardFilters,
    Viewer,
    render_board,
    render_board_update,
    viewer_for,
)
from sessions_app.dashboard.roles import render_roles_fragments
from sessions_app.dashboard.runs.panel import run_panel_variant
from sessions_app.dashboard.session import (
    SESSION_FRAGMENTS,
    fragments_for,
    render_session_fragments,
    session_access,
)
from sessions_app.services.audit import BOARD_GROUP, ROLES_GROUP, session_group
from sessions_app.services.event_catalog import EventKind, rerenders

logger = logging.getLogger(__name__)

T = TypeVar("T")


def with_current_roles(render: Callable[[], T]) -> Callable[[], T]:
    """``render`` after the role registry has caught up with the database.

    A rendering that shows roles may follow a role change committed in another process
    moments ago; its registry would otherwise notice only after ``ACODE_REGISTRY_MAX_AGE``.
    """

    def fresh() -> T:
        registry.sync()
        return render()

    return fresh


class _DashboardConsumer(AsyncWebsocketConsumer, GroupMember):
    """Refuses anonymous users; pages only listen, so messages from the browser are ignored.

    Group messages come through the process's :class:`GroupHub`, so the consumer needs
    no channel of its own: an alias with no layer configured gives it none.
    """

    channel_layer_alias = "acode-dashboard-sockets-use-the-group-hub"
    user: User
    groups_joined: tuple[str, ...] = ()
    _counted = False  # accepted, so in the open-websockets gauge until it disconnects

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # One render-and-send at a time per socket, so a page never gets an older
        # fragment after a newer one (a resync and an event can overlap).
        self._sending = asyncio.Lock()
        self._closed = False

    async def _authenticated(self) -> bool:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            # Before accept: the handshake is refused (HTTP 403), nothing is joined.
            await self.close()
            return False
        self.user = user
        return True

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        return None

    async def _send_html(self, html: str) -> None:
        if html and not self._closed:
            await self.send(text_data=html)

    async def _join(self, group: str) -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        await group_hub().join(group, self, layer)
        self.groups_joined = (*self.groups_joined, group)

    async def accept(self, subprotocol: str | None = None, headers: Any = None) -> None:
        await super().accept(subprotocol, headers)
        self._counted = True
        WEBSOCKET_CLIENTS.labels(consumer=type(self).__name__).inc()

    async def disconnect(self, code: int) -> None:
        self._closed = True
        if self._counted:
            self._counted = False
            WEBSOCKET_CLIENTS.labels(consumer=type(self).__name__).dec()
        for group in self.groups_joined:
            await group_hub().leave(group, self)

    async def group_message(self, message: dict[str, Any]) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None or self._closed:
            return
        async with self._sending:
            await handler(message)

    async def dashboard_resync(self, message: dict[str, Any]) -> None:
        """The hub may have missed events: send everything again."""
        await self._send_full()

    async def roles_changed(self, message: dict[str, Any]) -> None:
        """Role data changed (admin, API, CLI, YAML import): whatever the page shows of
        roles, tools, rules or prompts may have changed, so it gets everything again,
        rendered for this socket's user as on connect."""
        await self._send_full()

    async def _send_full(self) -> None:
        raise NotImplementedError


class BoardConsumer(_DashboardConsumer):
    """``/ws/board/?q=&role=&owner=&status=``: the board's columns, as the user sees them."""

    viewer: Viewer
    filters: BoardFilters
    role_slugs: tuple[str, ...]

    async def connect(self) -> None:
        if not await self._authenticated():
            return
        self.filters = BoardFilters.from_query_string(self.scope.get("query_string", b""))
        self.viewer = await database_sync_to_async(viewer_for)(self.user)
        async with self._sending:
            # Join before rendering: an event during the render is then sent after it.
            await self._join(BOARD_GROUP)
            await self._join(ROLES_GROUP)
            await self.accept()
            await self._send_full()

    def _key(self) -> tuple[Any, ...]:
        # Sockets with equal keys see exactly the same board.
        return ("board", self.viewer.scope, self.filters)

    async def _send_full(self) -> None:
        user, filters = self.user, self.filters

        def render() -> tuple[tuple[str, ...], str]:
            return tuple(filters.role_slugs()), render_board(user, filters)

        self.role_slugs, html = await shared_renders.get(
            (*self._key(), "all"), with_current_roles(render)
        )
        await self._send_html(html)

    async def session_event(self, event: dict[str, Any]) -> None:
        """Re-render the columns the session left and entered, if this user sees it."""
        if not rerenders(str(event.get("kind", ""))).board:
            return
        session_id = str(event.get("session", ""))
        data = event.get("data") or {}
        from_role = data.get("from_role") if isinstance(data, dict) else None
        user, filters = self.user, self.filters

        def render() -> tuple[tuple[str, ...], str]:
            shown = tuple(filters.role_slugs())
            return shown, render_board_update(user, filters, session_id, from_role)

        # A job status is not always audited, so it is part of the key (no stale reuse).
        status = data.get("status") if isinstance(data, dict) else None
        key = (*self._key(), session_id, from_role, status)
        shown, html = await shared_renders.get(key, render)
        if shown != self.role_slugs:
            # Roles were added, removed or renamed in admin: the columns changed, send all.
            await self._send_full()
        else:
            await self._send_html(html)


class SessionConsumer(_DashboardConsumer):
    """``/ws/sessions/<id>/``: one session's fragments, for users who may see the session."""

    session_id: str
    can_act: bool
    run_variant = 0  # who sees the same run panel (runs.run_panel_variant)
    timeline_seq = 0  # the newest transition this page's timeline shows

    async def connect(self) -> None:
        if not await self._authenticated():
            return
        self.session_id = str(self.scope["url_route"]["kwargs"]["pk"])
        may_see, self.can_act = await database_sync_to_async(session_access)(
            self.user, self.session_id
        )
        if not may_see:
            # Never joins the session's group, so it receives nothing about it.
            await self.close()
            return
        self.run_variant = await database_sync_to_async(run_panel_variant)(self.user)
        async with self._sending:
            # Join before rendering: an event during the render is then sent after it.
            await self._join(session_group(self.session_id))
            await self._join(ROLES_GROUP)
            await self.accept()
            await self._send_full()

    async def _send_full(self) -> None:
        await self._send_fragments(SESSION_FRAGMENTS, full=True)

    async def _send_fragments(
        self, names: tuple[str, ...], *, full: bool = False, extra: tuple[Any, ...] = ()
    ) -> None:
        if not names:
            return
        session_id, can_act, user = self.session_id, self.can_act, self.user
        # The timeline only grows: a page that has it up to some transition gets the newer
        # ones. Sockets that are up to date share this key, and so one rendering.
        after = 0 if full else self.timeline_seq

        def render() -> tuple[str, int]:
            return render_session_fragments(
                session_id, names, can_act=can_act, timeline_after=after, user=user
            )

        # The transition buttons depend on whether the user may act: one variant each; the
        # run panel's approval buttons also on which approver is looking.
        variant = self.run_variant if "run" in names else 0
        key = ("session", session_id, names, can_act, variant, after, *extra)
        # Everything at once is what a role change sends: with the registry caught up.
        fresh = with_current_roles(render) if names == SESSION_FRAGMENTS else render
        html, newest = await shared_renders.get(key, fresh)
        if "timeline" in names:
            self.timeline_seq = max(self.timeline_seq, newest)
        await self._send_html(html)

    async def session_event(self, event: dict[str, Any]) -> None:
        """Re-render the fragments this kind of event can change."""
        await self._send_fragments(fragments_for(str(event.get("kind", ""))))

    async def job_event(self, event: dict[str, Any]) -> None:
        """A job in this session moved: re-render its jobs panel (the live event stream).

        Job events need not write audit events, so the shared rendering is keyed by the
        event itself rather than reused by data version.
        """
        names = fragments_for(EventKind.JOB_EVENT)
        await self._send_fragments(names, extra=(event.get("job"), event.get("seq")))


class RolesConsumer(_DashboardConsumer):
    """``/ws/roles/``: the roles page's role cards, tool matrix and transition rules.

    Every signed-in user may see the roles page, and its fragments are the same for all
    of them, so every socket shares one rendering per change.
    """

    async def connect(self) -> None:
        if not await self._authenticated():
            return
        async with self._sending:
            await self._join(ROLES_GROUP)
            await self.accept()
            await self._send_full()

    async def _send_full(self) -> None:
        html = await shared_renders.get(("roles",), with_current_roles(render_roles_fragments))
        await self._send_html(html)
