"""Live events go out after commit, never for a rolled-back change, and a failed push
never undoes the change."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from rest_framework.authtoken.models import Token

from acode import live
from acode.asgi import application
from sessions_app.services import audit as events
from sessions_app.services.audit import publish_session_event
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition

SESSION = "7f1c0f8e-5a4e-4a55-9a51-2f0d3c1b9e10"


def session_kinds(sent: list[tuple[str, str]]) -> list[str]:
    return [kind for group, kind in sent if group == events.session_group(SESSION)]


def test_outside_a_request_events_go_out_at_once(sent: list[tuple[str, str]]) -> None:
    publish_session_event(SESSION, "role.changed")
    assert sent == [
        (events.session_group(SESSION), "role.changed"),
        (events.BOARD_GROUP, "role.changed"),
    ]


def test_a_burst_of_the_same_event_is_told_at_once_then_once_more(
    sent: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An outside agent's back-to-back hook events: the pages hear of the first at once and
    of the rest once, when the window closes; after a quiet window, at once again."""
    monkeypatch.setattr(live, "get_channel_layer", lambda: object())  # not the in-memory one
    for _ in range(5):
        publish_session_event(SESSION, "outside.event", within=0.2)
    assert session_kinds(sent) == ["outside.event"]
    deadline = time.monotonic() + 5
    while len(session_kinds(sent)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert session_kinds(sent) == ["outside.event", "outside.event"]
    assert (events.BOARD_GROUP, "outside.event") in sent
    time.sleep(0.6)  # the next window closes with nothing in it
    publish_session_event(SESSION, "outside.event", within=0.2)
    assert session_kinds(sent) == ["outside.event"] * 3


@pytest.mark.django_db(transaction=True)
def test_nothing_is_published_for_a_change_that_rolls_back(
    sent: list[tuple[str, str]], django_user_model: Any
) -> None:
    user = django_user_model.objects.create_user("bo", password="pw-bo-12345")
    with pytest.raises(RuntimeError), transaction.atomic():
        session_create(owner=user, title="Doomed")
        raise RuntimeError("roll back")
    assert sent == []
    session = session_create(owner=user, title="Kept")
    assert (events.session_group(session.pk), "session.created") in sent


@pytest.mark.django_db(transaction=True)
def test_a_failing_channel_layer_never_undoes_the_change(
    monkeypatch: pytest.MonkeyPatch, django_user_model: Any
) -> None:
    class Broken:
        async def group_send(self, group: str, message: dict[str, Any]) -> None:
            raise ConnectionError("redis is down")

    monkeypatch.setattr(live, "get_channel_layer", lambda: Broken())
    user = django_user_model.objects.create_user("cy", password="pw-cy-12345")
    session = session_create(owner=user, title="Still here")
    result = session_transition(session=session, to_role="planner", reason="plan", user=user)
    assert result.changed
    session.refresh_from_db()
    assert session.current_role.slug == "planner"


@pytest.mark.django_db(transaction=True)
def test_a_transition_over_the_asgi_stack_reaches_listeners(django_user_model: Any) -> None:
    """The production path: the ASGI app, Django's handler on the pool's threads, and the
    configured channel layer (Redis when REDIS_URL is set)."""
    user = django_user_model.objects.create_user("ada", password="pw-ada-123")
    auth = {"Authorization": f"Token {Token.objects.create(user=user).key}"}
    layer = get_channel_layer()
    assert layer is not None

    async def go() -> tuple[httpx.Response, dict[str, Any]]:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            created = await c.post("/api/sessions/", json={"title": "Live"}, headers=auth)
            assert created.status_code == 201, created.text
            session_id = created.json()["id"]
            channel = await layer.new_channel()
            await layer.group_add(events.session_group(session_id), channel)
            moved = await c.post(
                f"/api/sessions/{session_id}/transition/",
                json={"to_role": "planner", "reason": "plan it", "expected_role": "default"},
                headers=auth,
            )
            # Sends leave from a background thread, in order: the session's own
            # "session.created" may still be on its way when the listener joins.
            message = await asyncio.wait_for(layer.receive(channel), timeout=10)
            if message["kind"] == "session.created":
                message = await asyncio.wait_for(layer.receive(channel), timeout=10)
            await layer.group_discard(events.session_group(session_id), channel)
            return moved, message

    moved, message = async_to_sync(go)()
    assert moved.status_code == 200, moved.text
    assert message["kind"] == "role.changed"
    assert message["session"] == moved.json()["session"]["id"]
    assert message["data"] == {"from_role": "default", "to_role": "planner", "reason": "plan it"}
