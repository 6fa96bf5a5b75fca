"""What the live pages share with their websocket consumers (``sessions_app.consumers``):
the socket paths and the data version that tells whether a rendering is still current;
and how a form in a pushed fragment is answered (``back_to``)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from roles.registry import current_stamp
from sessions_app.selectors.sessions import newest_audit_id

# Routed in acode/routing.py; the pages connect to them with htmx's ws extension.
BOARD_SOCKET_PATH = "/ws/board/"
ROLES_SOCKET_PATH = "/ws/roles/"


def session_socket_path(session_id: Any) -> str:
    return f"/ws/sessions/{session_id}/"


def data_version() -> tuple[int, str]:
    """Moves on every committed change the dashboard shows: the newest audit event (every
    service write appends one in its transaction) and the role registry's stamp (every
    change to role data moves it)."""
    return (newest_audit_id(), current_stamp())


def back_to(request: HttpRequest, url: str) -> HttpResponse:
    """After a form's POST, the page at ``url``, with its messages. A fragment a socket
    pushed is rendered without a request, so its forms carry no CSRF token: they post
    through htmx (``hx-post``, whose header carries the page's token) and are answered
    with a full navigation (``HX-Redirect``); a plain POST gets a redirect."""
    if request.headers.get("HX-Request") == "true":
        return HttpResponse(headers={"HX-Redirect": url})
    return HttpResponseRedirect(url)
