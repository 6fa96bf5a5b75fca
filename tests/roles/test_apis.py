from __future__ import annotations

import re
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
    assert roles["Planner"]["tools"] == [
        "find_references", "grep_search", "list_directory", "read_file", "search_code",
        "semantic_search",
    ]  # fmt: skip
    assert roles["Planner"]["prompt_component"] == "roles/planner"
    assert roles["Default"]["prompt_component"] == "system"
    assert roles["Reviewer"]["context_strategy"] == "change_focused"
    assert roles["Coder"]["version"] == 1


@pytest.mark.django_db
def test_role_detail_lists_available_and_withheld_tools(api: APIClient) -> None:
    body = api.get("/api/roles/planner/").json()
    assert [t["name"] for t in body["available_tools"]] == [
        "find_references",
        "grep_search",
        "list_directory",
        "read_file",
        "search_code",
        "semantic_search",
    ]
    withheld = {t["name"]: t for t in body["withheld_tools"]}
    assert withheld["write_file"]["missing_permissions"] == ["write_files"]
    transitions = {t["to_role"]: t for t in body["transitions"]}
    assert transitions["coder"]["condition"] == "when the session has a plan"
    assert transitions["default"]["implicit"] is True


@pytest.mark.django_db
def test_unknown_role_is_404_rol_001(api: APIClient) -> None:
    response = api.get("/api/roles/architect/")
    assert response.status_code == 404
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


@pytest.mark.django_db
def test_role_write_needs_model_permission(api: APIClient) -> None:
    response = api.post("/api/roles/", {"slug": "docs", "name": "Docs"}, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "ACODE-API-403"
    assert api.patch("/api/roles/coder/", {"max_llm_calls": 3}, format="json").status_code == 403


@pytest.mark.django_db
def test_role_create_update_delete_through_services(boss_api: APIClient) -> None:
    created = boss_api.post(
        "/api/roles/",
        {
            "slug": "docs-writer",
            "name": "Docs Writer",
            "permissions": ["read_files", "write_files"],
            "write_paths": ["docs/**"],
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert "write_file" in created.json()["tools"]
    assert created.json()["version"] == 1
    updated = boss_api.patch(
        "/api/roles/Docs Writer/", {"permissions": ["read_files"]}, format="json"
    )
    assert "write_file" not in updated.json()["tools"]
    assert updated.json()["version"] == 2
    bad = boss_api.patch("/api/roles/docs-writer/", {"write_paths": ["../x"]}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "ACODE-ROL-004"
    assert "write_paths '../x' must not contain '..'" in bad.json()["details"]["problems"][0]
    taken = boss_api.post("/api/roles/", {"slug": "other", "name": "planner"}, format="json")
    assert taken.status_code == 409 and taken.json()["code"] == "ACODE-API-409"
    assert "the name 'planner' is taken by role planner" in taken.json()["message"]
    reserved = boss_api.post("/api/roles/", {"slug": "export", "name": "Export"}, format="json")
    assert reserved.status_code == 400 and reserved.json()["code"] == "ACODE-ROL-004"
    dangerous = boss_api.patch(
        "/api/roles/docs-writer/", {"constraints": ["rm -rf / when done"]}, format="json"
    )
    assert dangerous.status_code == 400 and dangerous.json()["code"] == "ACODE-PRM-001"
    dup = boss_api.post("/api/roles/", {"slug": "docs-writer", "name": "Other"}, format="json")
    assert dup.status_code == 409
    assert boss_api.delete("/api/roles/docs-writer/").status_code == 204
    assert boss_api.get("/api/roles/docs-writer/").json()["code"] == "ACODE-ROL-001"
    default = boss_api.delete("/api/roles/default/")
    assert default.status_code == 409 and default.json()["code"] == "ACODE-ROL-005"


@pytest.mark.django_db
def test_role_edits_and_rejected_prompts_are_audited(boss_api: APIClient) -> None:
    from sessions_app.models import AuditEvent

    boss_api.patch("/api/roles/coder/", {"max_llm_calls": 3}, format="json")
    edited = AuditEvent.objects.filter(event_type="RoleEdited", role="coder").last()
    assert edited is not None and edited.actor == "boss" and edited.target == "coder v2"
    boss_api.patch("/api/roles/coder/", {"constraints": ["chmod 777 everything"]}, format="json")
    rejected = AuditEvent.objects.get(event_type="PromptRejected")
    assert rejected.details["findings"][0]["match"] == "chmod 777"


@pytest.mark.django_db
def test_roles_export_import_over_api(boss_api: APIClient) -> None:
    text = boss_api.get("/api/roles/export/").content.decode()
    assert text.startswith("format: acode-roles/1")
    changed = text.replace("max_llm_calls: 30", "max_llm_calls: 31")
    response = boss_api.post("/api/roles/import/", changed, content_type="application/yaml")
    assert response.status_code == 200, response.json()
    assert response.json()["versions"] == [
        "coder v2 (" + response.json()["versions"][0].split("(")[1]
    ]
    assert boss_api.get("/api/roles/coder/").json()["max_llm_calls"] == 31
    broken = boss_api.post("/api/roles/import/", "format: nope\n", content_type="application/yaml")
    assert broken.status_code == 400 and broken.json()["code"] == "ACODE-IMP-001"


@pytest.mark.django_db
def test_a_role_import_that_is_not_utf8_is_a_clean_400(boss_api: APIClient) -> None:
    before = boss_api.get("/api/roles/export/").content
    response = boss_api.generic(
        "POST",
        "/api/roles/import/",
        b"format: acode-roles/1\n\xff\xfe\x00",
        content_type="application/yaml",
    )
    assert response.status_code == 400 and response.json()["code"].startswith("ACODE-")
    assert "UTF-8" in response.json()["message"]
    assert boss_api.get("/api/roles/export/").content == before


@pytest.mark.django_db
def test_prompt_packs_and_me(api: APIClient) -> None:
    packs = api.get("/api/prompt-packs/").json()
    assert packs[0]["name"] == "acode-standard" and packs[0]["active"] is True
    keys = [c["key"] for c in packs[0]["components"]]
    assert "roles/planner" in keys and "content" not in packs[0]["components"][0]
    detail = api.get("/api/prompt-packs/acode-standard/").json()
    assert (
        "You are the Planner agent"
        in next(c for c in detail["components"] if c["key"] == "roles/planner")["content"]
    )
    assert api.get("/api/prompt-packs/nope/").json()["code"] == "ACODE-PRM-002"
    assert api.get("/api/me/").json() == {"username": "dev", "is_staff": False}


@pytest.mark.django_db
def test_every_endpoint_is_in_the_schema(api: APIClient) -> None:
    from django.urls import URLPattern, URLResolver, get_resolver
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)

    def api_routes(patterns: Any, prefix: str = "") -> list[str]:
        out: list[str] = []
        for p in patterns:
            if isinstance(p, URLResolver):
                out += api_routes(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                out.append(prefix + str(p.pattern))
        return out

    routes = [
        r
        for r in api_routes(get_resolver().url_patterns)
        if r.startswith("api/") and not any(page in r for page in ("schema", "docs", "redoc"))
    ]
    documented = {p.strip("/").replace("{", "<").replace("}", ">") for p in schema["paths"]}
    for route in routes:
        normalised = route.strip("/")
        for conv in ("str:", "uuid:", "int:", "slug:"):
            normalised = normalised.replace("<" + conv, "<")
        normalised = normalised.replace("<pk>", "<id>")
        # A regular-expression route (re_path) names its parameters as groups.
        normalised = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", normalised).replace("^", "")
        normalised = normalised.replace("$", "").strip("/")
        assert normalised in documented, route


@pytest.mark.django_db
def test_token_login_and_logout(user: Any) -> None:
    client = APIClient()
    bad = client.post("/api/auth/token/", {"username": "dev", "password": "nope"}, format="json")
    assert bad.status_code == 401 and bad.json()["code"] == "ACODE-API-401"
    missing = client.post("/api/auth/token/", {"username": "dev"}, format="json")
    assert missing.status_code == 400 and "password" in missing.json()["details"]["fields"]
    ok = client.post(
        "/api/auth/token/", {"username": "dev", "password": "pw-dev-123"}, format="json"
    )
    assert ok.status_code == 200 and ok.json()["username"] == "dev"
    token = ok.json()["token"]
    assert (
        client.post(
            "/api/auth/token/", {"username": "dev", "password": "pw-dev-123"}, format="json"
        ).json()["token"]
        == token
    )
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/me/").json()["username"] == "dev"
    assert client.delete("/api/auth/token/").status_code == 204
    assert client.get("/api/me/").status_code == 401
