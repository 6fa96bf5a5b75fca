"""Checking a model endpoint: tool-call probes (three by default, deterministic sampling)
say in how many the model called the tool, how fast, and with what context window; from
admin, the API and the CLI. The model is a scripted OpenAI-compatible server (the LLM
boundary), or a scripted endpoint."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from roles.models import EndpointKind, ModelEndpoint
from tests.fake_openai import fake_openai

pytestmark = pytest.mark.django_db

READ = json.dumps({"action": "call_tool", "tool": "read_file", "arguments": {"path": "README.md"}})


def endpoint(base_url: str, **fields: Any) -> ModelEndpoint:
    return ModelEndpoint.objects.create(
        **{
            "name": "local",
            "kind": EndpointKind.OPENAI,
            "base_url": base_url,
            "model": "qwen",
            "supports_json_schema": True,
            **fields,
        }
    )


def check(client: APIClient, name: str = "local") -> Any:
    return client.post(f"/api/model-endpoints/{name}/check/", format="json")


@pytest.fixture
def staff(admin_user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


def test_a_model_that_calls_the_tool_is_reported_with_speed_and_context_window(
    staff: APIClient,
) -> None:
    with fake_openai([READ], models=[{"id": "qwen", "max_model_len": 32768}]) as server:
        endpoint(server.base_url)
        response = check(staff)
    assert response.status_code == 200, response.content
    found = response.json()
    assert found["can_call_tools"] and found["reachable"] and found["constrained"]
    assert found["context_window"] == 32768 and found["configured_context_window"] == 8192
    assert found["answer"] == 'read_file {"path": "README.md"}'
    assert found["seconds"] > 0 and "can call tools" in found["message"]
    # The probe is what a job sends: the JSON-schema union of its one tool and the answer.
    schema = server.requests[0]["response_format"]["schema"]
    assert schema["anyOf"][0]["properties"]["tool"] == {"const": "read_file"}


def test_a_model_that_answers_in_text_cannot_call_tools(staff: APIClient) -> None:
    with fake_openai(["I would read README.md first."]) as server:
        endpoint(server.base_url, supports_json_schema=False)
        found = check(staff).json()
    assert found["reachable"] and not found["can_call_tools"]
    assert "answered in text" in found["message"] and "JSON schema" in found["message"]
    assert found["answer"] == "I would read README.md first."
    assert server.requests[0]["tools"][0]["function"]["name"] == "read_file"


def test_a_tool_call_with_empty_arguments_does_not_count(staff: APIClient) -> None:
    empty = {
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
        ]
    }
    with fake_openai([empty]) as server:
        endpoint(server.base_url, supports_json_schema=False)
        found = check(staff).json()
    assert not found["can_call_tools"] and "unusable arguments" in found["message"]


def test_a_server_window_smaller_than_the_configured_one_is_pointed_out(
    staff: APIClient,
) -> None:
    models = [{"id": "qwen", "meta": {"n_ctx": 2048, "n_ctx_train": 32768}}]
    with fake_openai([READ], models=models) as server:
        endpoint(server.base_url)
        found = check(staff).json()
    assert found["context_window"] == 2048
    assert "smaller than the configured one" in found["message"]


def test_an_endpoint_nothing_listens_on_is_unreachable(staff: APIClient) -> None:
    endpoint("http://127.0.0.1:9/v1")
    found = check(staff).json()
    assert not found["reachable"] and not found["can_call_tools"]
    assert "did not answer" in found["message"]


def test_the_default_endpoint_is_the_settings_one(staff: APIClient, settings: Any) -> None:
    with fake_openai([READ]) as server:
        settings.ACODE_LLM_BASE_URL = server.base_url
        found = check(staff, "default").json()
        listed = staff.get("/api/model-endpoints/").json()
    assert found["endpoint"] == "default" and found["can_call_tools"]
    assert listed[0]["name"] == "default" and listed[0]["base_url"] == server.base_url


def test_unknown_and_disabled_endpoints_are_refused_with_their_codes(
    staff: APIClient,
) -> None:
    unknown = check(staff, "nope")
    assert unknown.status_code == 404 and unknown.json()["code"] == "ACODE-API-404"
    ModelEndpoint.objects.create(name="off", model="m", base_url="http://x/v1", enabled=False)
    disabled = check(staff, "off")
    assert disabled.status_code == 400 and disabled.json()["code"] == "ACODE-LLM-001"


def test_every_probe_is_sent_with_deterministic_sampling(staff: APIClient) -> None:
    with fake_openai([READ]) as server:
        endpoint(server.base_url)
        found = check(staff).json()
    assert (found["probes"], found["tool_probes"]) == (3, 3)
    assert "3 of 3 probes called a tool" in found["message"]
    assert len(server.requests) == 3
    assert all(r["temperature"] == 0 and r["seed"] == 0 for r in server.requests)


def test_a_model_that_calls_the_tool_only_sometimes_is_said_to_be_unreliable(
    staff: APIClient,
) -> None:
    with fake_openai([READ, "I would rather talk.", READ]) as server:
        endpoint(server.base_url)
        found = staff.post("/api/model-endpoints/local/check/?probes=3").json()
    assert (found["tool_probes"], found["can_call_tools"]) == (2, False)
    assert "calls tools unreliably: 2 of 3 probes called a tool" in found["message"]


def test_a_scripted_endpoint_gives_the_same_answer_check_after_check(staff: APIClient) -> None:
    """The stability the issue asked for: the same endpoint checked again says the same."""
    call = {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]}
    ModelEndpoint.objects.create(name="replay", kind=EndpointKind.SCRIPTED, script=[call])
    ModelEndpoint.objects.create(
        name="talker", kind=EndpointKind.SCRIPTED, script=[{"content": "Hello."}]
    )
    first, second = (check(staff, "replay").json() for _ in range(2))
    assert first["can_call_tools"] and (first["probes"], first["tool_probes"]) == (3, 3)
    assert {k: v for k, v in first.items() if k != "seconds"} == {
        k: v for k, v in second.items() if k != "seconds"
    }
    assert first["base_url"] == "scripted:replay" and first["model"] == "scripted"
    talker = [check(staff, "talker").json() for _ in range(3)]
    assert all(not t["can_call_tools"] and t["tool_probes"] == 0 for t in talker)
    assert all("answered in text" in t["message"] for t in talker)


def test_checking_needs_the_change_permission(api: APIClient) -> None:
    assert check(api, "default").status_code == 403
    assert api.get("/api/model-endpoints/").status_code == 403


def test_admin_check_action_reports_each_endpoint(admin_client_logged_in: Client) -> None:
    with fake_openai([READ], models=[{"id": "qwen", "max_model_len": 16384}]) as server:
        row = endpoint(server.base_url)
        response = admin_client_logged_in.post(
            "/admin/roles/modelendpoint/",
            {"action": "check_endpoints", "_selected_action": [row.pk]},
            follow=True,
        )
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    assert any("local: The model can call tools" in m and "16384" in m for m in shown), shown
