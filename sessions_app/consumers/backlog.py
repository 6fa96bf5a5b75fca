"""``/ws/backlog/<slug>/``: a project's kanban, for every user who may see the project.

It re-renders on every backlog change of the project (``backlog.changed``, published by
``services.backlog`` after commit) and on every run event (a card shows its run's stage),
and sends the kanban fragment whole; a reconnect gets it whole too."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from sessions_app.consumers.pages import _DashboardConsumer
from sessions_app.dashboard.backlog import render_kanban
from sessions_app.services.audit import BOARD_GROUP
from sessions_app.services.backlog import BACKLOG_GROUP


class BacklogConsumer(_DashboardConsumer):
    slug: str

    async def connect(self) -> None:
        if not await self._authenticated():
            return
        self.slug = str(self.scope["url_route"]["kwargs"]["slug"])
        html = await database_sync_to_async(render_kanban)(self.user, self.slug)
        if not html:  # not visible: joins nothing, hears nothing
            await self.close()
            return
        async with self._sending:
            await self._join(BACKLOG_GROUP)
            await self._join(BOARD_GROUP)
            await self.accept()
            await self._send_full()

    async def _send_full(self) -> None:
        html = await database_sync_to_async(render_kanban)(self.user, self.slug)
        await self._send_html(html)

    async def backlog_changed(self, event: dict[str, Any]) -> None:
        await self._send_full()

    async def session_event(self, event: dict[str, Any]) -> None:
        if str(event.get("kind", "")).startswith("run."):
            await self._send_full()
