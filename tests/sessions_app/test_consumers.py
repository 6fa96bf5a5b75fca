"""The dashboard's websockets: who may connect, who hears what, and what is pushed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from html.parser import HTMLParser
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser, User
from django.test import Client

from acode.routing import websocket_urlpatterns
from sessions_app.models import AgentSession
from sessions_app.services.audit import BOARD_GROUP, session_group
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition

# Consumers reach the database from other threads (database_sync_to_async), which close
# connections inside a test transaction: these tests commit for real, then flush.
pytestmark = pytest.mark.django_db(transaction=True)

ROUTER = URLRouter(websocket_urlpatterns)


@pytest.fixture(autouse=True)
def _in_memory_layer(settings: Any) -> None:
    # Each test talks to its own in-process layer, whatever REDIS_URL says.
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.fixture
def lead(django_user_model: Any) -> User:
    return django_user_model.objects.create_superuser("lead", "lead@example.com", "pw-lead-123")


@pytest.fixture
def stranger(django_user_model: Any) -> User:
    return django_user_model.objects.create_user("stranger", "s@example.com", "pw-stranger-1")


@pytest.fixture
def owned(user: User) -> AgentSession:
    return session_create(owner=user, title="Owned by dev")


def run(coro: Callable[[], Awaitable[None]]) -> None:
    """Run an async test body from this synchronous test."""
    async_to_sync(coro)()


def communicator(path: str, user: Any) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(ROUTER, path)
    comm.scope["user"] = user
    return comm


def event(session: AgentSession, kind: str, **data: Any) -> dict[str, Any]:
    return {"type": "session.event", "kind": kind, "session": str(session.id), "data": data}


class _Roots(HTMLParser):
    """Ids of the top-level elements of a pushed message (what htmx swaps by id)."""

    VOID = frozenset({"input", "br", "img", "hr", "meta", "link"})

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth == 0:
            self.ids.append(dict(attrs).get("id") or f"<{tag} without id>")
        if tag not in self.VOID:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        self.depth -= 1


def root_ids(html: str) -> list[str]:
    parser = _Roots()
    parser.feed(html)
    return parser.ids


def test_anonymous_board_connection_is_refused() -> None:
    async def body() -> None:
        comm = communicator("/ws/board/", AnonymousUser())
        connected, _ = await comm.connect()
        assert connected is False

    run(body)


def test_anonymous_session_connection_is_refused(owned: AgentSession) -> None:
    async def body() -> None:
        comm = communicator(f"/ws/sessions/{owned.id}/", AnonymousUser())
        connected, _ = await comm.connect()
        assert connected is False

    run(body)


def test_anonymous_is_refused_through_the_real_asgi_stack() -> None:
    from acode.asgi import application

    async def body() -> None:
        comm = WebsocketCommunicator(
            application, "/ws/board/", headers=[(b"origin", b"http://testserver")]
        )
        connected, _ = await comm.connect()
        assert connected is False

    run(body)


def test_logged_in_browser_connects_with_its_session_cookie(user: User) -> None:
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()

    async def body() -> None:
        comm = WebsocketCommunicator(
            AuthMiddlewareStack(ROUTER),
            "/ws/board/",
            headers=[(b"origin", b"http://testserver"), (b"cookie", cookie)],
        )
        connected, _ = await comm.connect()
        assert connected is True
        assert "board-columns" in root_ids(await comm.receive_from())
        await comm.disconnect()

    run(body)


def test_user_without_access_gets_nothing_from_the_session_group(
    owned: AgentSession, stranger: User
) -> None:
    async def body() -> None:
        comm = communicator(f"/ws/sessions/{owned.id}/", stranger)
        connected, _ = await comm.connect()
        assert connected is False
        layer = get_channel_layer()
        await layer.group_send(session_group(owned.id), event(owned, "role.changed"))
        assert await comm.receive_nothing(timeout=0.2)

    run(body)


def test_unknown_session_is_refused(user: User) -> None:
    async def body() -> None:
        comm = communicator("/ws/sessions/00000000-0000-0000-0000-000000000000/", user)
        connected, _ = await comm.connect()
        assert connected is False

    run(body)


def test_session_socket_sends_every_fragment_on_connect(owned: AgentSession, user: User) -> None:
    async def body() -> None:
        comm = communicator(f"/ws/sessions/{owned.id}/", user)
        connected, _ = await comm.connect()
        assert connected
        html = await comm.receive_from()
        assert root_ids(html) == [
            "session-header",
            "session-transitions",
            "run-panel",
            "session-delivered",
            "session-timeline",
            "session-plan",
            "session-changes",
            "session-jobs",
            "session-time",
        ]
        assert 'data-role="default"' in html
        await comm.disconnect()

    run(body)


def test_role_change_pushes_header_buttons_timeline_and_time(
    owned: AgentSession, user: User
) -> None:
    async def body() -> None:
        comm = communicator(f"/ws/sessions/{owned.id}/", user)
        await comm.connect()
        await comm.receive_from()
        await database_sync_to_async(session_transition)(
            session=owned, to_role="planner", reason="Start planning", user=user
        )
        await get_channel_layer().group_send(
            session_group(owned.id), event(owned, "role.changed", from_role="default")
        )
        html = await comm.receive_from()
        # The timeline gets only the new entry, on top of the list the page has.
        assert root_ids(html) == [
            "session-header",
            "session-transitions",
            "timeline-count",
            "timeline-list",
            "session-time",
        ]
        assert '<ol id="timeline-list" hx-swap-oob="afterbegin">' in html
        assert html.count('class="timeline-entry"') == 1
        assert 'data-role="planner"' in html
        assert "Start planning" in html
        # Planner → Coder needs a plan: no button for it, only the reason it is blocked.
        assert 'data-transition="coder"' not in html
        assert "the session has no plan yet" in html
        await comm.disconnect()

    run(body)


def test_follower_gets_no_transition_buttons(owned: AgentSession, lead: User) -> None:
    from django.contrib.auth.models import Permission

    viewer = User.objects.create_user("viewer", "v@example.com", "pw-viewer-1")
    viewer.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))

    async def body() -> None:
        comm = communicator(f"/ws/sessions/{owned.id}/", viewer)
        connected, _ = await comm.connect()
        assert connected
        html = await comm.receive_from()
        assert "data-transition=" not in html
        assert "not change its role" in html
        await comm.disconnect()
        owner = communicator(f"/ws/sessions/{owned.id}/", owned.owner)
        await owner.connect()
        assert 'data-transition="planner"' in await owner.receive_from()
        await owner.disconnect()

    run(body)


def test_board_owner_hears_only_about_own_sessions(
    owned: AgentSession, stranger: User, lead: User
) -> None:
    theirs = session_create(owner=stranger, title="Someone else's")

    async def body() -> None:
        comm = communicator("/ws/board/", owned.owner)
        assert (await comm.connect())[0]
        first = await comm.receive_from()
        assert "Owned by dev" in first
        assert "Someone else" not in first
        layer = get_channel_layer()
        await layer.group_send(BOARD_GROUP, event(theirs, "session.created"))
        assert await comm.receive_nothing(timeout=0.2)
        await database_sync_to_async(session_transition)(
            session=owned, to_role="explorer", reason="Look around", user=owned.owner
        )
        await layer.group_send(BOARD_GROUP, event(owned, "role.changed", from_role="default"))
        html = await comm.receive_from()
        assert root_ids(html) == ["col-default", "col-explorer"]
        assert "Owned by dev" in html
        await comm.disconnect()

        boss = communicator("/ws/board/", lead)
        await boss.connect()
        everything = await boss.receive_from()
        assert "Owned by dev" in everything and "Someone else" in everything
        await boss.disconnect()

    run(body)


def test_board_filters_apply_to_pushes(owned: AgentSession) -> None:
    async def body() -> None:
        comm = communicator("/ws/board/?role=planner", owned.owner)
        await comm.connect()
        first = await comm.receive_from()
        assert root_ids(first) == ["board-columns", "board-role-filter", "board-model-notice"]
        assert 'id="col-planner"' in first and 'id="col-default"' not in first
        await database_sync_to_async(session_transition)(
            session=owned, to_role="planner", reason="Plan it", user=owned.owner
        )
        await get_channel_layer().group_send(
            BOARD_GROUP, event(owned, "role.changed", from_role="default")
        )
        html = await comm.receive_from()
        # Only the shown column: the Default column is not on this page.
        assert root_ids(html) == ["col-planner"]
        assert "Owned by dev" in html
        await comm.disconnect()

    run(body)


def test_job_events_push_the_jobs_panel_and_keep_the_socket(
    owned: AgentSession, user: User
) -> None:
    async def body() -> None:
        comm = communicator(f"/ws/sessions/{owned.id}/", user)
        await comm.connect()
        await comm.receive_from()
        await get_channel_layer().group_send(
            session_group(owned.id),
            {"type": "job.event", "session": str(owned.id), "job": "x", "seq": 1, "kind": "note"},
        )
        # the run panel too: its counters (calls, time waited) move with every job event
        assert root_ids(await comm.receive_from()) == ["run-panel", "session-jobs"]
        await get_channel_layer().group_send(session_group(owned.id), event(owned, "plan.updated"))
        assert root_ids(await comm.receive_from()) == ["session-transitions", "session-plan"]
        await comm.disconnect()

    run(body)


def test_sockets_of_one_process_share_one_group_membership(owned: AgentSession, user: User) -> None:
    async def body() -> None:
        layer = get_channel_layer()
        group = session_group(owned.id)
        first = communicator(f"/ws/sessions/{owned.id}/", user)
        second = communicator(f"/ws/sessions/{owned.id}/", user)
        for comm in (first, second):
            assert (await comm.connect())[0]
            await comm.receive_from()
        assert len(layer.groups[group]) == 1
        await layer.group_send(group, event(owned, "changes.updated"))
        for comm in (first, second):
            assert root_ids(await comm.receive_from()) == [
                "session-transitions",
                "session-changes",
            ]
        await first.disconnect()
        assert len(layer.groups[group]) == 1
        await second.disconnect()
        assert not layer.groups.get(group)

    run(body)
