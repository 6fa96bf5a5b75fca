"""Live events go out after commit; a request's events wait until its response is sent."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory
from rest_framework.authtoken.models import Token

from acode.asgi import application
from sessions_app import events
from sessions_app.events import PublishAfterResponseMiddleware, publish_session_event

SESSION = "7f1c0f8e-5a4e-4a55-9a51-2f0d3c1b9e10"


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(group, kind) of every message handed to the channel layer, in order."""
    out: list[tuple[str, str]] = []

    def record(sends: list[tuple[str, dict[str, Any]]]) -> None:
        out.extend((group, message["kind"]) for group, message in sends)

    monkeypatch.setattr(events, "_send", record)
    return out


def session_kinds(sent: list[tuple[str, str]]) -> list[str]:
    return [kind for group, kind in sent if group == events.session_group(SESSION)]


def test_outside_a_request_events_go_out_at_once(sent: list[tuple[str, str]]) -> None:
    publish_session_event(SESSION, "role.changed")
    assert sent == [
        (events.session_group(SESSION), "role.changed"),
        (events.BOARD_GROUP, "role.changed"),
    ]


def test_a_requests_events_wait_until_its_response_is_closed(
    sent: list[tuple[str, str]],
) -> None:
    def view(request: HttpRequest) -> HttpResponse:
        publish_session_event(SESSION, "role.changed")
        publish_session_event(SESSION, "plan.changed")
        return HttpResponse("done")

    response = PublishAfterResponseMiddleware(view)(RequestFactory().get("/"))
    assert sent == [], "nothing may go out before the response has been sent"
    publish_session_event(SESSION, "after.the.view")  # no longer inside the request
    assert session_kinds(sent) == ["after.the.view"]
    response.close()  # what the server does after the last byte
    assert session_kinds(sent) == ["after.the.view", "role.changed", "plan.changed"]
    response.close()
    assert len(session_kinds(sent)) == 3, "a second close sends nothing again"


def test_a_request_without_events_keeps_its_response_untouched(
    sent: list[tuple[str, str]],
) -> None:
    plain = HttpResponse("plain")
    response = PublishAfterResponseMiddleware(lambda request: plain)(RequestFactory().get("/"))
    assert response is plain and "close" not in vars(response)


def test_events_of_a_view_that_raises_still_go_out(sent: list[tuple[str, str]]) -> None:
    def view(request: HttpRequest) -> HttpResponse:
        publish_session_event(SESSION, "role.changed")  # committed before the failure
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        PublishAfterResponseMiddleware(view)(RequestFactory().get("/"))
    assert session_kinds(sent) == ["role.changed"]
    publish_session_event(SESSION, "later")
    assert session_kinds(sent) == ["role.changed", "later"], "the request's hold was released"


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
            message = await asyncio.wait_for(layer.receive(channel), timeout=10)
            await layer.group_discard(events.session_group(session_id), channel)
            return moved, message

    moved, message = async_to_sync(go)()
    assert moved.status_code == 200, moved.text
    assert message["kind"] == "role.changed"
    assert message["session"] == moved.json()["session"]["id"]
    assert message["data"] == {"from_role": "default", "to_role": "planner", "reason": "plan it"}
