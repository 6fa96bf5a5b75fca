"""The ASGI entry point serves HTTP through Django's WSGI handler on its thread pool."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from rest_framework.authtoken.models import Token

from acode.asgi import application

# Requests run on the pool's threads with their own connections: data must be committed.
pytestmark = pytest.mark.django_db(transaction=True)


def call(method: str, path: str, **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            return await c.request(method, path, **kwargs)

    return async_to_sync(go)()


def test_api_requests_with_bodies_go_through_the_asgi_app(django_user_model: Any) -> None:
    user = django_user_model.objects.create_user("ada", password="pw-ada-123")
    auth = {"Authorization": f"Token {Token.objects.create(user=user).key}"}
    anonymous = call("GET", "/api/me/")
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "ACODE-API-401"
    assert call("GET", "/api/me/", headers=auth).json()["username"] == "ada"
    created = call("POST", "/api/sessions/", json={"title": "Over ASGI"}, headers=auth)
    assert created.status_code == 201, created.text
    moved = call(
        "POST",
        f"/api/sessions/{created.json()['id']}/transition/",
        json={"to_role": "planner", "reason": "plan it", "expected_role": "default"},
        headers=auth,
    )
    assert moved.status_code == 200, moved.text
    assert moved.json()["session"]["current_role"]["slug"] == "planner"


def test_an_inactive_users_token_is_refused(django_user_model: Any) -> None:
    user = django_user_model.objects.create_user("gone", password="pw-gone-123", is_active=False)
    auth = {"Authorization": f"Token {Token.objects.create(user=user).key}"}
    refused = call("GET", "/api/me/", headers=auth)
    assert refused.status_code == 401 and refused.json()["code"] == "ACODE-API-401"
    bad = call("GET", "/api/me/", headers={"Authorization": "Token nope"})
    assert bad.status_code == 401
