"""Websocket routes: the dashboard's live board and session pages."""

from __future__ import annotations

from typing import Any

from django.urls import path

from sessions_app.consumers import BoardConsumer, SessionConsumer

# The same paths as sessions_app.dashboard.live.BOARD_SOCKET_PATH and session_socket_path().
websocket_urlpatterns: list[Any] = [
    path("ws/board/", BoardConsumer.as_asgi()),
    path("ws/sessions/<uuid:pk>/", SessionConsumer.as_asgi()),
]
