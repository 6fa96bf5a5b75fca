"""Model endpoints as a newcomer sets them up (issue 34): admin's form asks only for what
the endpoint's kind uses (a scripted one needs no model name), the API and the CLI save
through the same service, and a role's preferred or fallback model must name an endpoint
when the role is saved (API, admin, import), not fail at run time."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from roles.models import EndpointKind, ModelEndpoint, Role
from roles.portability.document import dump_yaml, load_yaml
from roles.registry import registry
from tests.roles.test_admin import _new_role_form

pytestmark = pytest.mark.django_db

STEP = {"content": "Hello.", "delay": 1}


@pytest.fixture
def staff(admin_user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


def form(**fields: Any) -> dict[str, Any]:
    return {"name": "demo", "context_window": "8192", "enabled": "on", "script": "[]", **fields}


def test_the_scripted_form_asks_for_a_script_and_no_model(admin_client_logged_in: Any) -> None:
    page = admin_client_logged_in.get("/admin/roles/modelendpoint/add/?kind=scripted")
    html = page.content.decode()
    assert 'name="script"' in html
    for server_field in ("model", "base_url", "api_key_env", "supports_json_schema"):
        assert f'name="{server_field}"' not in html, server_field
    saved = admin_client_logged_in.post(
        "/admin/roles/modelendpoint/add/?kind=scripted",
        form(kind="scripted", script=json.dumps([STEP])),
    )
    assert saved.status_code == 302, saved.content.decode()[:3000]
    row = ModelEndpoint.objects.get(name="demo")
    assert (row.kind, row.model, row.base_url, row.script) == ("scripted", "", "", [STEP])
    # Its change page shows its kind's fields only; the list labels it as scripted.
    change = admin_client_logged_in.get(f"/admin/roles/modelendpoint/{row.pk}/change/")
    assert 'name="script"' in change.content.decode()
    assert 'name="model"' not in change.content.decode()
    listed = admin_client_logged_in.get("/admin/roles/modelendpoint/").content.decode()
    assert "scripted (replays a script)" in listed


def test_the_form_refuses_what_a_kind_lacks_with_the_code(admin_client_logged_in: Any) -> None:
    empty = admin_client_logged_in.post(
        "/admin/roles/modelendpoint/add/?kind=scripted", form(kind="scripted")
    )
    assert empty.status_code == 200
    assert "ACODE-LLM-004" in empty.content.decode() and "non-empty list" in empty.content.decode()
    bad = admin_client_logged_in.post(
        "/admin/roles/modelendpoint/add/?kind=scripted",
        form(kind="scripted", script=json.dumps([{"content": "x", "delay": -1}])),
    )
    assert "delay is a number of seconds" in bad.content.decode()
    server = admin_client_logged_in.post(
        "/admin/roles/modelendpoint/add/?kind=openai",
        form(
            kind="openai", base_url="http://127.0.0.1:9/v1", model="", schema_format="json_object"
        ),
    )
    assert "needs the model name its server serves" in server.content.decode()
    assert not ModelEndpoint.objects.exists()
    # Without a kind chosen, the page offers both, each labelled with its kind.
    both = admin_client_logged_in.get("/admin/roles/modelendpoint/add/").content.decode()
    assert "?kind=scripted" in both and "Scripted replies (kind scripted)" in both


def test_the_api_adds_and_changes_an_endpoint_keeping_what_its_kind_uses(
    staff: APIClient,
) -> None:
    body = {"kind": "scripted", "script": [STEP], "model": "ignored", "input_price": "1.5"}
    created = staff.put("/api/model-endpoints/demo/", body, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["model"] == "" and created.json()["input_price"] == "1.5000"
    changed = staff.put(
        "/api/model-endpoints/demo/",
        {"kind": "openai", "model": "qwen", "base_url": "http://127.0.0.1:9/v1"},
        format="json",
    )
    assert changed.status_code == 200 and changed.json()["model"] == "qwen"
    assert ModelEndpoint.objects.get(name="demo").script == []
    negative = staff.put("/api/model-endpoints/demo/", {"input_price": "-1"}, format="json")
    assert negative.status_code == 409 and "a price is 0 or more" in negative.json()["message"]
    reserved = staff.put("/api/model-endpoints/default/", {"model": "m"}, format="json")
    assert reserved.status_code == 409 and "settings' endpoint" in reserved.json()["message"]
    refused = staff.put("/api/model-endpoints/other/", {"kind": "scripted"}, format="json")
    # 409: the body is well formed; what it asks for conflicts with what its kind needs.
    assert refused.status_code == 409 and refused.json()["code"] == "ACODE-LLM-004"


def test_a_role_naming_no_endpoint_is_refused_when_saved(staff: APIClient) -> None:
    refused = staff.patch("/api/roles/coder/", {"preferred_model": "gpt-nine"}, format="json")
    assert refused.status_code == 404, refused.content
    body = refused.json()
    assert body["code"] == "ACODE-API-404"
    assert "preferred_model 'gpt-nine' names no model endpoint" in body["message"]
    assert registry.get("coder").spec.preferred_model == ""
    fallback = staff.patch("/api/roles/coder/", {"fallback_model": "nope"}, format="json")
    assert fallback.status_code == 404 and "fallback_model 'nope'" in fallback.json()["message"]
    ModelEndpoint.objects.create(name="gpt-nine", kind=EndpointKind.SCRIPTED, script=[STEP])
    accepted = staff.patch("/api/roles/coder/", {"preferred_model": "gpt-nine"}, format="json")
    assert accepted.status_code == 200 and accepted.json()["preferred_model"] == "gpt-nine"
    cleared = staff.patch("/api/roles/coder/", {"preferred_model": ""}, format="json")
    assert cleared.status_code == 200  # empty: the default endpoint


def test_an_import_naming_no_endpoint_is_refused(staff: APIClient) -> None:
    """The path the issue took: export, edit the YAML, import."""
    exported = staff.get("/api/roles/export/")
    assert exported.status_code == 200, exported.content
    document = load_yaml(exported.content.decode())
    coder = next(r for r in document["roles"] if r["slug"] == "coder")
    coder["preferred_model"] = "big-model"
    refused = staff.post("/api/roles/import/", dump_yaml(document), content_type="application/yaml")
    assert refused.status_code == 409 and refused.json()["code"] == "ACODE-IMP-003"
    assert "preferred_model 'big-model' names no model endpoint" in json.dumps(refused.json())


def test_admin_refuses_a_role_naming_no_endpoint(admin_client_logged_in: Any) -> None:
    response = admin_client_logged_in.post(
        "/admin/roles/role/add/",
        _new_role_form(name="Writer", slug="writer", prompt_key="writer", preferred_model="nope"),
    )
    assert response.status_code == 200
    assert "preferred_model &#x27;nope&#x27; names no model endpoint" in response.content.decode()
    assert not Role.objects.filter(slug="writer").exists()
