"""The OpenAPI schema tells the truth: page shapes, nullability, every error status."""

from __future__ import annotations

from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema

ERROR_BODY = {"$ref": "#/components/schemas/ErrorOutput"}


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return dict(SchemaGenerator().get_schema(request=None, public=True))


def operations(openapi: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path, method, operation)
        for path, methods in openapi["paths"].items()
        for method, operation in methods.items()
    ]


def component(openapi: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    return dict(openapi["components"]["schemas"][ref["$ref"].rsplit("/", 1)[-1]])


def ok_schema(operation: dict[str, Any]) -> dict[str, Any]:
    ok = operation["responses"].get("200") or operation["responses"]["201"]
    return dict(ok["content"]["application/json"]["schema"])


def test_schema_is_valid_openapi(openapi: dict[str, Any]) -> None:
    validate_schema(openapi)


def test_session_and_audit_lists_are_documented_as_pages(openapi: dict[str, Any]) -> None:
    sessions = component(openapi, ok_schema(openapi["paths"]["/api/sessions/"]["get"]))
    assert set(sessions["properties"]) == {"count", "next", "previous", "results"}
    assert sessions["properties"]["results"]["type"] == "array"
    audit = component(openapi, ok_schema(openapi["paths"]["/api/audit/"]["get"]))
    assert set(audit["properties"]) == {"next", "previous", "results"}
    assert "null" in audit["properties"]["next"]["type"]


def test_history_documents_the_first_from_role_as_null(openapi: dict[str, Any]) -> None:
    history = ok_schema(openapi["paths"]["/api/sessions/{id}/history/"]["get"])
    transition = component(openapi, history["items"])
    assert transition["properties"]["from_role"]["type"] == ["string", "null"]
    assert transition["properties"]["role_version"]["type"] == ["integer", "null"]


def test_every_error_status_has_the_error_body(openapi: dict[str, Any]) -> None:
    for path, method, operation in operations(openapi):
        for status, response in operation["responses"].items():
            if int(status) >= 400:
                body = response["content"]["application/json"]["schema"]
                assert body == ERROR_BODY, f"{method.upper()} {path} {status}"
                assert "ACODE-" in response["description"], f"{method.upper()} {path} {status}"


def test_every_operation_documents_the_errors_any_request_can_get(
    openapi: dict[str, Any],
) -> None:
    for path, method, operation in operations(openapi):
        statuses = set(operation["responses"])
        assert {"400", "406", "413", "431"} <= statuses, f"{method.upper()} {path}"
        if operation.get("security"):
            assert "401" in statuses, f"{method.upper()} {path}"
        if "{" in path:
            assert "404" in statuses, f"{method.upper()} {path}"
        if "requestBody" in operation:
            assert "415" in statuses, f"{method.upper()} {path}"


@pytest.mark.parametrize(
    ("path", "method", "status", "code"),
    [
        ("/api/sessions/{id}/transition/", "post", "409", "ACODE-ROL-002"),
        ("/api/sessions/{id}/transition/", "post", "409", "ACODE-ROL-006"),
        ("/api/sessions/{id}/transition/", "post", "400", "ACODE-ROL-007"),
        ("/api/sessions/{id}/transition/", "post", "422", "ACODE-API-422"),
        ("/api/sessions/{id}/", "patch", "403", "ACODE-API-403"),
        ("/api/sessions/{id}/plan/", "put", "400", "ACODE-SES-004"),
        ("/api/jobs/{id}/cancel/", "post", "409", "ACODE-JOB-006"),
        ("/api/jobs/{id}/events/", "get", "400", "ACODE-API-400"),
        ("/api/audit/verify/", "get", "403", "ACODE-API-403"),
        ("/api/auth/token/", "post", "429", "ACODE-API-429"),
        ("/api/sessions/{id}/runs/", "post", "409", "ACODE-RUN-002"),
        ("/api/runs/{id}/answer/", "post", "409", "ACODE-RUN-004"),
        ("/api/runs/{id}/approve/", "post", "403", "ACODE-RUN-008"),
        ("/api/runs/{id}/approve/", "post", "403", "ACODE-RUN-009"),
        ("/api/runs/{id}/approve/", "post", "409", "ACODE-RUN-011"),
        ("/api/runs/{id}/events/", "get", "400", "ACODE-API-400"),
        ("/api/workflows/import/", "post", "400", "ACODE-IMP-001"),
        ("/api/workflows/import/", "post", "400", "ACODE-IMP-002"),
        ("/api/workflows/import/", "post", "409", "ACODE-IMP-003"),
        ("/api/roles/import/", "post", "400", "ACODE-INP-003"),
        ("/api/roles/import/", "post", "409", "ACODE-IMP-003"),
        ("/api/sessions/{id}/jobs/", "post", "409", "ACODE-RUN-003"),
        ("/api/sessions/{id}/transition/", "post", "409", "ACODE-RUN-003"),
        ("/api/sessions/{id}/transition/", "post", "404", "ACODE-ROL-001"),
        ("/api/sessions/{id}/runs/", "post", "404", "ACODE-RUN-001"),
        ("/api/sessions/{id}/plan/steps/{number}/", "patch", "404", "ACODE-API-404"),
        ("/api/roles/{name}/prompt/", "get", "404", "ACODE-ROL-001"),
        ("/api/roles/{name}/", "delete", "404", "ACODE-ROL-001"),
        ("/api/roles/", "post", "404", "ACODE-API-404"),
        ("/api/roles/", "post", "409", "ACODE-API-409"),
        ("/api/audit/", "get", "404", "ACODE-API-404"),
        ("/api/sessions/", "post", "403", "ACODE-SES-002"),
        ("/api/workflows/export/", "get", "403", "ACODE-API-403"),
    ],
)
def test_operations_name_the_codes_they_raise(
    openapi: dict[str, Any], path: str, method: str, status: str, code: str
) -> None:
    assert code in openapi["paths"][path][method]["responses"][status]["description"]
