from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient


@pytest.mark.django_db
def test_anonymous_gets_401_with_code() -> None:
    response = APIClient().get("/api/roles/")
    assert response.status_code == 401
    assert response.json()["code"] == "ACODE-API-401"


@pytest.mark.django_db
def test_roles_list_shows_spec_fields(api: APIClient) -> None:
    roles = {r["name"]: r for r in api.get("/api/roles/").json()}
    assert roles["Planner"]["tools"] == ["grep_search", "list_directory", "read_file"]
    assert roles["Planner"]["prompt_component"] == "roles/planner"
    assert roles["Default"]["prompt_component"] == "system"
    assert roles["Reviewer"]["context_strategy"] == "change_focused"
    assert roles["Coder"]["version"] == 1


@pytest.mark.django_db
def test_role_detail_lists_available_and_withheld_tools(api: APIClient) -> None:
    body = api.get("/api/roles/planner/").json()
    assert [t["name"] for t in body["available_tools"]] == [
        "grep_search",
        "list_directory",
        "read_file",
    ]
    withheld = {t["name"]: t for t in body["withheld_tools"]}
    assert withheld["write_file"]["missing_permissions"] == ["write_files"]
    transitions = {t["to_role"]: t for t in body["transitions"]}
    assert transitions["coder"]["condition"] == "when the session has a plan"
    assert transitions["default"]["implicit"] is True


@pytest.mark.django_db
def test_unknown_role_is_400_rol_001(api: APIClient) -> None:
    response = api.get("/api/roles/architect/")
    assert response.status_code == 400
    body: dict[str, Any] = response.json()
    assert body["code"] == "ACODE-ROL-001"
    assert "Planner" in body["details"]["known_roles"]


@pytest.mark.django_db
def test_role_prompt_endpoint_reports_fallback(api: APIClient) -> None:
    body = api.get("/api/roles/coder/prompt/").json()
    assert body["components"] == ["system", "roles/coder", "constraints"]
    assert body["fell_back"] is False


@pytest.mark.django_db
def test_tools_and_rules_lists(api: APIClient) -> None:
    tools = {t["name"]: t for t in api.get("/api/tools/").json()}
    assert tools["write_file"]["required_permissions"] == ["read_files", "write_files"]
    rules = api.get("/api/transition-rules/").json()
    assert {"from_role": "coder", "to_role": "reviewer"}.items() <= next(
        r for r in rules if r["from_role"] == "coder" and r["to_role"] == "reviewer"
    ).items()


@pytest.mark.django_db
def test_openapi_schema_validates(api: APIClient) -> None:
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.validation import validate_schema

    schema = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    assert "/api/roles/{name}/" in schema["paths"]
