"""/healthz and /readyz: what an orchestrator and an anonymous caller see."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from acode import views

pytestmark = pytest.mark.django_db


def test_healthz_says_ok_and_nothing_else(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_checks_database_redis_and_sandbox(client: Client) -> None:
    response = client.get("/readyz")
    body = response.json()
    assert set(body["checks"]) == {"database", "redis", "sandbox"}
    assert response.status_code == (200 if all(body["checks"].values()) else 503)
    assert "problems" not in body, "anonymous callers get no internals"


def test_readyz_is_not_ready_without_a_sandbox_and_tells_staff_why(
    client: Client, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(views.CHECKS, "sandbox", lambda: "bwrap not found: install bubblewrap")
    anonymous = client.get("/readyz")
    assert anonymous.status_code == 503 and anonymous.json()["checks"]["sandbox"] is False
    assert "problems" not in anonymous.json()
    client.force_login(admin_user)
    staff = client.get("/readyz").json()
    assert staff["problems"] == {"sandbox": "bwrap not found: install bubblewrap"}
