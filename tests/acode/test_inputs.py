"""Input limits: body size, header lengths, invisible text, NUL and surrogates, deep JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from acode.inputs import MAX_JSON_DEPTH, is_blank, trim_invisible
from sessions_app.models import AgentSession, AuditEvent, RoleTransition
from tests.sessions_app.apis.apikit import new_session, transition

pytestmark = pytest.mark.django_db

ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"


def code_of(response: Any) -> str:
    return str(response.json()["code"])


def post_raw(api: APIClient, url: str, body: str, **headers: Any) -> Any:
    return api.generic("POST", url, body, content_type="application/json", **headers)


def move(api: APIClient, sid: str, **headers: Any) -> Any:
    body = {"to_role": "planner", "reason": "plan it"}
    return api.post(f"/api/sessions/{sid}/transition/", body, format="json", **headers)


def rows() -> tuple[int, int, int]:
    return (
        AgentSession.objects.count(),
        RoleTransition.objects.count(),
        AuditEvent.objects.count(),
    )


def test_invisible_characters_are_blank() -> None:
    assert is_blank(ZERO_WIDTH + " \t\n\u00a0\u3164")
    assert not is_blank(ZERO_WIDTH + "x")
    assert trim_invisible(f"{ZERO_WIDTH} fix it \u200b") == "fix it"
    assert trim_invisible("a\u200bb") == "a\u200bb"


def test_reason_of_zero_width_spaces_is_blank(api: APIClient) -> None:
    sid = new_session(api)["id"]
    before = rows()
    response = transition(api, sid, "planner", ZERO_WIDTH * 3)
    assert response.status_code == 400 and code_of(response) == "ACODE-ROL-007"
    assert rows() == before


def test_title_of_zero_width_spaces_is_blank(api: APIClient) -> None:
    response = api.post("/api/sessions/", {"title": ZERO_WIDTH}, format="json")
    assert response.status_code == 400 and code_of(response) == "ACODE-INP-002"


def test_long_reason_is_refused_before_it_is_stored(api: APIClient) -> None:
    sid = new_session(api)["id"]
    before = rows()
    response = transition(api, sid, "planner", "x" * 2_001)
    assert response.status_code == 400 and code_of(response) == "ACODE-INP-001"
    assert response.json()["details"]["fields"]["reason"]
    assert rows() == before
    assert transition(api, sid, "planner", "x" * 2_000).status_code == 200


@pytest.mark.parametrize(
    ("url", "field", "limit"),
    [("/api/sessions/", "title", 200), ("/api/sessions/", "task", 20_000)],
)
def test_text_limits(api: APIClient, url: str, field: str, limit: int) -> None:
    body = {"title": "t", field: "y" * (limit + 1)}
    response = api.post(url, body, format="json")
    assert response.status_code == 400 and code_of(response) == "ACODE-INP-001"


def test_plan_limits(api: APIClient) -> None:
    sid = new_session(api)["id"]
    url = f"/api/sessions/{sid}/plan/"
    too_many = api.put(url, {"steps": ["s"] * 201}, format="json")
    assert code_of(too_many) == "ACODE-SES-004"
    too_long = api.put(url, {"steps": [{"title": "t", "detail": "d" * 20_001}]}, format="json")
    assert code_of(too_long) == "ACODE-SES-004"
    assert api.get(url).json() == []


def test_diff_limit(api: APIClient) -> None:
    sid = new_session(api)["id"]
    body = {"path": "a.py", "kind": "modified", "diff": "+" * 1_000_001}
    response = api.post(f"/api/sessions/{sid}/changes/", body, format="json")
    assert response.status_code == 400 and code_of(response) == "ACODE-INP-001"


@override_settings(ACODE_MAX_BODY_BYTES=1000)
def test_body_over_the_limit_is_a_json_413(api: APIClient) -> None:
    before = rows()
    response = post_raw(api, "/api/sessions/", json.dumps({"title": "x" * 2000}))
    assert response.status_code == 413 and code_of(response) == "ACODE-API-413"
    assert rows() == before


def test_default_body_limit_is_below_django_s_html_400(api: APIClient) -> None:
    response = post_raw(api, "/api/sessions/", json.dumps({"title": "x" * 3_000_000}))
    assert response.status_code == 413 and code_of(response) == "ACODE-API-413"


def test_long_request_id_is_refused_and_nothing_is_stored(api: APIClient) -> None:
    sid = new_session(api)["id"]
    before = rows()
    response = move(api, sid, HTTP_X_REQUEST_ID="r" * 5_000)
    assert response.status_code == 431 and code_of(response) == "ACODE-API-431"
    assert len(response["X-Request-ID"]) == 32  # a made-up one, not the refused header
    assert rows() == before


def test_long_idempotency_key_is_refused(api: APIClient) -> None:
    response = api.post(
        "/api/sessions/", {"title": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="k" * 201
    )
    assert response.status_code == 431 and code_of(response) == "ACODE-API-431"


def test_request_id_of_200_characters_is_recorded(api: APIClient) -> None:
    sid = new_session(api)["id"]
    assert move(api, sid, HTTP_X_REQUEST_ID="r" * 200).status_code == 200
    assert RoleTransition.objects.get(session_id=sid, seq=2).request_id == "r" * 200


@pytest.mark.parametrize(
    "body",
    [
        '{"title": "a\\u0000b"}',
        '{"title": "a\\ud800b"}',
        '{"title": "ok", "task": "\\udfff"}',
        '{"title": "ok", "a\\u0000": 1}',
        '{"title": "ok", "nested": [{"x": ["\\u0000"]}]}',
    ],
)
def test_nul_and_lone_surrogates_are_refused(api: APIClient, body: str) -> None:
    before = rows()
    response = post_raw(api, "/api/sessions/", body)
    assert response.status_code == 400 and code_of(response) == "ACODE-INP-003"
    assert rows() == before


def test_nul_in_the_query_string_is_refused(api: APIClient) -> None:
    response = api.get("/api/audit/?actor=a%00b")
    assert response.status_code == 400 and code_of(response) == "ACODE-INP-003"
    response = api.get("/api/sessions/?q=%00")
    assert response.status_code == 400 and code_of(response) == "ACODE-INP-003"


def test_paired_surrogates_are_fine(api: APIClient) -> None:
    response = post_raw(api, "/api/sessions/", '{"title": "smile \\ud83d\\ude00"}')
    assert response.status_code == 201 and response.json()["title"] == "smile \U0001f600"


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deeply_nested_json_is_a_clean_400(api: APIClient, depth: int) -> None:
    response = post_raw(api, "/api/sessions/", "[" * depth + "]" * depth)
    assert response.status_code == 400 and code_of(response) == "ACODE-INP-004"


def test_json_at_the_depth_limit_is_parsed(api: APIClient) -> None:
    nested = "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1)
    response = post_raw(api, "/api/sessions/", '{"title": "x", "extra": ' + nested + "}")
    # Parsed: what is refused is the field the endpoint does not take, not the nesting.
    assert response.status_code == 400 and code_of(response) == "ACODE-API-400"
    assert response.json()["details"]["fields"] == {"extra": ["Unknown field."]}


def test_invalid_utf8_body_is_a_400(api: APIClient) -> None:
    response = api.generic(
        "POST", "/api/sessions/", b'{"title": "\xff\xfe"}', content_type="application/json"
    )
    assert response.status_code == 400 and code_of(response) == "ACODE-API-400"
