"""Shared steps of the sessions API tests."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient


def new_session(api: APIClient, **data: Any) -> dict[str, Any]:
    response = api.post(
        "/api/sessions/",
        {"title": "JWT auth", "task": "Add JWT authentication", **data},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def transition(api: APIClient, sid: str, to: str, reason: str = "because", **extra: Any) -> Any:
    return api.post(
        f"/api/sessions/{sid}/transition/",
        {"to_role": to, "reason": reason, **extra},
        format="json",
    )
