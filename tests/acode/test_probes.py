"""/healthz and /readyz: what an orchestrator and an anonymous caller see."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from acode import readiness
from acode.workers import worker_announce, worker_forget
from roles.registry import registry

pytestmark = pytest.mark.django_db

needs_redis = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"), reason="the worker registry lives in Redis"
)


@pytest.fixture
def fake_worker() -> Iterator[str]:
    """A worker record in Redis consuming every queue the roles use (no process behind it)."""
    hostname = f"fake-{uuid.uuid4().hex[:8]}@probes"
    registry.sync()
    queues = sorted({role.spec.queue for role in registry.list_roles()})
    worker_announce(hostname=hostname, queues=queues, ttl=60)
    yield hostname
    worker_forget(hostname=hostname)


def test_healthz_says_ok_and_nothing_else(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_checks_database_redis_sandbox_and_workers(client: Client) -> None:
    response = client.get("/readyz")
    body = response.json()
    assert set(body["checks"]) == {"database", "redis", "sandbox", "workers"}
    assert response.status_code == (200 if all(body["checks"].values()) else 503)
    assert "problems" not in body, "anonymous callers get no internals"


def test_readyz_is_not_ready_without_a_sandbox_and_tells_staff_why(
    client: Client, admin_user: Any, monkeypatch: pytest.MonkeyPatch, fake_worker: str
) -> None:
    monkeypatch.setitem(readiness.CHECKS, "sandbox", lambda: "bwrap not found: install bubblewrap")
    anonymous = client.get("/readyz")
    assert anonymous.status_code == 503 and anonymous.json()["checks"]["sandbox"] is False
    assert "problems" not in anonymous.json()
    client.force_login(admin_user)
    staff = client.get("/readyz").json()
    assert staff["problems"] == {"sandbox": "bwrap not found: install bubblewrap"}


def test_readyz_says_why_when_no_copy_on_write_layer_can_be_mounted(
    client: Client, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessions_app.containment import sandbox

    monkeypatch.delenv("ACODE_SANDBOX", raising=False)
    status = sandbox.SandboxStatus(
        True, "/usr/bin/bwrap", "ok", overlay=False,
        overlay_reason="/usr/bin/bwrap cannot mount overlays: use bubblewrap 0.11+",
    )  # fmt: skip
    monkeypatch.setattr(sandbox, "_status", status)
    client.force_login(admin_user)
    body = client.get("/readyz").json()
    assert body["checks"]["sandbox"] is False
    assert "cannot mount overlays" in body["problems"]["sandbox"]


@needs_redis
def test_readyz_is_ready_with_a_live_worker_on_every_role_queue(
    client: Client, monkeypatch: pytest.MonkeyPatch, fake_worker: str
) -> None:
    monkeypatch.setitem(readiness.CHECKS, "sandbox", lambda: "")
    response = client.get("/readyz")
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "status": "ready",
        "checks": {"database": True, "redis": True, "sandbox": True, "workers": True},
    }


@needs_redis
def test_readyz_without_a_worker_tells_only_staff_which_queues_lack_one(
    client: Client, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(readiness.CHECKS, "sandbox", lambda: "")
    anonymous = client.get("/readyz")
    assert anonymous.status_code == 503
    assert anonymous.json()["checks"]["workers"] is False
    assert "problems" not in anonymous.json() and "agents" not in anonymous.content.decode()
    client.force_login(admin_user)
    staff = client.get("/readyz").json()
    assert set(staff["problems"]) == {"workers"}
    assert "no live worker consumes queue(s) agents" in staff["problems"]["workers"]
