"""Every answer under /api/ that is an error is JSON with an ACODE code and the request id."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from acode.error_codes import ERROR_CODES
from tests.sessions_app.apis.apikit import new_session

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent.parent


def assert_json_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"code", "message", "details", "request_id"}
    assert body["code"] == code
    assert body["request_id"] == response["X-Request-ID"]
    return dict(body)


def test_unknown_api_url_is_a_json_404(api: APIClient) -> None:
    assert_json_error(api.get("/api/nothing-here/"), 404, "ACODE-API-404")


def test_non_uuid_session_id_is_a_json_404(api: APIClient) -> None:
    assert_json_error(api.get("/api/sessions/not-a-uuid/"), 404, "ACODE-API-404")
    assert_json_error(api.get("/api/jobs/42/events/"), 404, "ACODE-API-404")


def test_bad_plan_step_number_is_a_json_404(api: APIClient) -> None:
    sid = new_session(api)["id"]
    response = api.patch(f"/api/sessions/{sid}/plan/steps/x/", {"status": "done"}, format="json")
    assert_json_error(response, 404, "ACODE-API-404")


def test_wrong_method_is_a_json_405(api: APIClient) -> None:
    assert_json_error(api.delete("/api/sessions/"), 405, "ACODE-API-405")


def test_unacceptable_accept_header_is_a_json_406(api: APIClient) -> None:
    response = api.get("/api/sessions/", HTTP_ACCEPT="application/xml")
    assert_json_error(response, 406, "ACODE-API-406")


def test_form_body_is_a_json_415(api: APIClient) -> None:
    response = api.post("/api/sessions/", {"title": "x"})  # multipart, not JSON
    assert_json_error(response, 415, "ACODE-API-415")


def test_anonymous_is_a_json_401() -> None:
    assert_json_error(APIClient().get("/api/sessions/"), 401, "ACODE-API-401")


def test_disallowed_host_is_a_json_400(api: APIClient) -> None:
    assert_json_error(api.get("/api/me/", HTTP_HOST="evil.example"), 400, "ACODE-API-400")


def test_crash_is_a_json_500_logged_with_the_request_id(
    api: APIClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from sessions_app.apis import sessions

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(sessions, "usage", explode)
    with caplog.at_level(logging.ERROR, logger="acode.middleware"):
        response = api.get("/api/usage/", HTTP_X_REQUEST_ID="trace-500")
    body = assert_json_error(response, 500, "ACODE-API-500")
    assert body["request_id"] == "trace-500"
    assert "boom" not in body["message"]  # no internals in the answer
    record = next(r for r in caplog.records if "trace-500" in r.getMessage())
    assert record.exc_info is not None and "boom" in str(record.exc_info[1])


def test_domain_errors_carry_the_request_id(api: APIClient) -> None:
    sid = new_session(api)["id"]
    response = api.post(
        f"/api/sessions/{sid}/transition/",
        {"to_role": "wizard", "reason": "magic"},
        format="json",
        HTTP_X_REQUEST_ID="req-7",
    )
    assert assert_json_error(response, 404, "ACODE-ROL-001")["request_id"] == "req-7"


def test_every_response_has_a_request_id(api: APIClient) -> None:
    made_up = api.get("/api/me/")["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", made_up)
    assert api.get("/api/me/", HTTP_X_REQUEST_ID="abc")["X-Request-ID"] == "abc"


def test_pages_outside_the_api_keep_their_html_errors(client: Client) -> None:
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert not response["Content-Type"].startswith("application/json")
    assert "X-Request-ID" not in response


def test_every_code_in_the_source_is_documented() -> None:
    """The README's table comes from the registry (tests/acode/test_docs.py); here, every
    ACODE code written anywhere in the code is in the registry."""
    used: set[str] = set()
    for package in ("acode", "audit", "roles", "sessions_app"):
        for path in (ROOT / package).rglob("*.py"):
            used |= set(re.findall(r"ACODE-[A-Z]{3}-\d{3}", path.read_text(encoding="utf-8")))
    assert used - set(ERROR_CODES) == set()
