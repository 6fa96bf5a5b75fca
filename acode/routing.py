"""Websocket routes: the dashboard's live board, session pages and roles page."""

from __future__ import annotations

from typing import Any

from django.urls import path

from sessions_app.consumers import (
    BacklogConsumer,
    BoardConsumer,
    RolesConsumer,
    SessionConsumer,
)

# The same paths as sessions_app.dashboard.live's BOARD_SOCKET_PATH, ROLES_SOCKET_PATH and
# session_socket_path().
websocket_urlpatterns: list[Any] = [
    path("ws/board/", BoardConsumer.as_asgi()),
    path("ws/sessions/<uuid:pk>/", SessionConsumer.as_asgi()),
    path("ws/roles/", RolesConsumer.as_asgi()),
    path("ws/backlog/<slug:slug>/", BacklogConsumer.as_asgi()),
]
