"""How the API client turns odd answers into CLI errors (no server needed)."""

from __future__ import annotations

import httpx
import pytest

from acode.cli.client import ApiClient
from acode.cli.config import Settings
from acode.cli.errors import ApiError, CliError, ExitCode

SETTINGS = Settings("http://acode.test", "tok", "ACODE_TOKEN", "ACODE_URL", "", "")


def client_answering(response: httpx.Response) -> ApiClient:
    client = ApiClient(SETTINGS)
    client._http = httpx.Client(
        base_url=SETTINGS.url, transport=httpx.MockTransport(lambda request: response)
    )
    return client


def test_a_200_that_is_not_json_is_reported() -> None:
    client = client_answering(httpx.Response(200, text="<html>hello</html>"))
    with pytest.raises(CliError) as caught:
        client.get("/api/roles/")
    assert caught.value.exit_code == ExitCode.OTHER
    assert "not JSON" in caught.value.message
    assert "http://acode.test" in caught.value.suggestion


def test_an_html_404_means_the_route_is_missing() -> None:
    client = client_answering(httpx.Response(404, text="<html>Not Found</html>"))
    with pytest.raises(ApiError) as caught:
        client.get("/api/sessions/x/jobs/")
    assert caught.value.endpoint_missing
    assert caught.value.exit_code == ExitCode.NOT_FOUND


def test_an_api_error_body_keeps_its_code_and_details() -> None:
    body = {"code": "ACODE-ROL-002", "message": "no", "details": {"from_role": "planner"}}
    client = client_answering(httpx.Response(409, json=body))
    with pytest.raises(ApiError) as caught:
        client.post("/api/sessions/x/transition/", {"to_role": "reviewer", "reason": "r"})
    assert (caught.value.code, caught.value.details) == ("ACODE-ROL-002", {"from_role": "planner"})
    assert caught.value.exit_code == ExitCode.REFUSED
    assert not caught.value.endpoint_missing


def test_a_server_error_without_a_body_exits_1() -> None:
    client = client_answering(httpx.Response(502, text="Bad Gateway"))
    with pytest.raises(ApiError) as caught:
        client.get("/api/roles/")
    assert caught.value.code == "ACODE-API-502"
    assert caught.value.exit_code == ExitCode.OTHER


def test_the_token_is_sent_as_a_token_header() -> None:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=[])

    client = ApiClient(SETTINGS)
    client._http = httpx.Client(
        base_url=SETTINGS.url,
        headers=dict(client._http.headers),
        transport=httpx.MockTransport(record),
    )
    client.get("/api/roles/", params={"a": None, "b": "x"})
    assert seen[0].headers["Authorization"] == "Token tok"
    assert str(seen[0].url) == "http://acode.test/api/roles/?b=x"
