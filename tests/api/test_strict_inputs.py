"""The server refuses what the schema does not allow, and says so in the schema.

Strings are strings, a body holds only the fields it declares, a query value that is
given must be valid (empty is not a value), a parameter comes at most once, and an
unknown object is a 404.
"""

from __future__ import annotations

from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from sessions_app.models import AgentSession, Job, PendingChange
from sessions_app.services.jobs import job_create
from tests.sessions_app.apis.apikit import new_session

pytestmark = pytest.mark.django_db


def code(response: Any) -> str:
    return str(response.json()["code"])


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return dict(SchemaGenerator().get_schema(request=None, public=True))


def parameter(openapi: dict[str, Any], path: str, method: str, name: str) -> dict[str, Any]:
    found = [p for p in openapi["paths"][path][method]["parameters"] if p["name"] == name]
    return dict(found[0])


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("jobs/", {"request": 0}, "request"),
        ("changes/", {"path": "a.py", "kind": "created", "diff": 0}, "diff"),
        ("changes/approve/", {"summary": 0}, "summary"),
        ("transition/", {"to_role": "planner", "reason": 5}, "reason"),
    ],
)
def test_a_number_where_text_is_expected_is_refused(
    api: APIClient, url: str, body: dict[str, Any], field: str
) -> None:
    sid = new_session(api)["id"]
    jobs, changes = Job.objects.count(), PendingChange.objects.count()
    response = api.post(f"/api/sessions/{sid}/{url}", body, format="json")
    assert response.status_code == 400 and code(response) == "ACODE-API-400"
    assert response.json()["details"]["fields"] == {field: ["Must be a string."]}
    assert (Job.objects.count(), PendingChange.objects.count()) == (jobs, changes)


def test_json_types_are_what_the_schema_says(api: APIClient) -> None:
    for body in ({"title": "t", "risk_tier": 1}, {"title": ["t"]}, {"title": True}):
        response = api.post("/api/sessions/", body, format="json")
        assert response.status_code == 400, body
    sid = new_session(api)["id"]
    plan = {"steps": [{"title": "One", "depends_on": ["1"]}]}
    refused = api.put(f"/api/sessions/{sid}/plan/", plan, format="json")
    assert refused.status_code == 400 and code(refused) == "ACODE-SES-004"


def test_a_body_holds_only_the_fields_it_declares(api: APIClient) -> None:
    response = api.post("/api/sessions/", {"title": "t", "titel": "typo"}, format="json")
    assert response.status_code == 400 and code(response) == "ACODE-API-400"
    assert response.json()["details"]["fields"] == {"titel": ["Unknown field."]}
    assert not AgentSession.objects.exists()


@pytest.mark.parametrize(
    ("url", "query"),
    [
        ("/api/sessions/", "offset=null"),
        ("/api/sessions/", "limit=0"),
        ("/api/sessions/", "limit=501"),
        ("/api/sessions/", "status="),
        ("/api/sessions/", "q=%E2%80%8B"),  # a zero-width space is blank
        ("/api/runs/", "session="),
        ("/api/runs/", "status=running,"),
        ("/api/runs/", "status=running&status=failed"),
        ("/api/audit/", "since="),
        ("/api/audit/", "last=0"),
        ("/api/audit/", "page_size=x"),
        ("/api/audit/", "actor="),
        ("/api/audit/export/", "format=jsonl&format=csv"),
        ("/api/audit/", "role=" + "r" * 1001),
    ],
)
def test_a_malformed_query_value_is_a_400(api: APIClient, url: str, query: str) -> None:
    response = api.get(f"{url}?{query}")
    assert response.status_code == 400, response.content
    assert code(response).startswith(("ACODE-API-400", "ACODE-INP-"))


def test_query_bounds_are_in_the_schema_and_enforced(
    api: APIClient, openapi: dict[str, Any]
) -> None:
    sid = new_session(api)["id"]
    job = job_create(session=AgentSession.objects.get(pk=sid), request="x")
    assert api.get(f"/api/jobs/{job.pk}/events/?after=-624").status_code == 400
    after = parameter(openapi, "/api/jobs/{id}/events/", "get", "after")["schema"]
    assert after["minimum"] == 0
    assert api.get("/api/audit/?last=0").status_code == 400
    last = parameter(openapi, "/api/audit/", "get", "last")["schema"]
    assert (last["minimum"], last["maximum"]) == (1, 10_000)
    status = parameter(openapi, "/api/sessions/{id}/jobs/", "get", "status")
    assert (status["style"], status["explode"]) == ("form", False)
    assert api.get(f"/api/sessions/{sid}/jobs/?status=queued,running").status_code == 200
    assert api.get(f"/api/sessions/{sid}/jobs/?status=nonsense").status_code == 400


def test_unknown_objects_are_404(api: APIClient, admin_user: Any) -> None:
    prompt = api.get("/api/roles/ask_human/prompt/")
    assert prompt.status_code == 404 and code(prompt) == "ACODE-ROL-001"
    boss = APIClient()
    boss.force_authenticate(admin_user)
    gone = boss.delete("/api/roles/0/")
    assert gone.status_code == 404 and code(gone) == "ACODE-ROL-001"
    sid = new_session(api)["id"]
    unknown_role = api.get(f"/api/sessions/{sid}/context/?role=wizard")
    assert unknown_role.status_code == 404 and code(unknown_role) == "ACODE-ROL-001"
    step = api.patch(f"/api/sessions/{sid}/plan/steps/3/", {"status": "done"}, format="json")
    assert step.status_code == 404 and code(step) == "ACODE-API-404"


def test_refusals_are_expressed_in_the_schema(openapi: dict[str, Any]) -> None:
    schemas = openapi["components"]["schemas"]
    job = schemas["JobCreateInputRequest"]
    assert job["additionalProperties"] is False
    request = job["properties"]["request"]
    assert request["maxLength"] == 20_000
    assert request["pattern"] == r"^[^\u0000]*$"  # no NUL
    assert request["not"]["pattern"].startswith(r"^[\u0000-\u0020")  # not blank
    summary = schemas["ApproveInputRequest"]["properties"]["summary"]
    assert summary["pattern"] == r"^[^\u0000]*$"  # may be blank, never NUL
    q = parameter(openapi, "/api/sessions/", "get", "q")
    assert q["schema"]["minLength"] == 1 and "ACODE-INP-003" in q["description"]
    key = parameter(openapi, "/api/sessions/", "post", "Idempotency-Key")["schema"]
    assert key["maxLength"] == 200


def test_every_request_line_fits_what_the_servers_accept(openapi: dict[str, Any]) -> None:
    """Every query value escaped (12 characters for a 4-byte character) still fits the 16 KB
    request line daphne and uvicorn read, so a valid request is never cut off."""
    for path, operations in openapi["paths"].items():
        for method, operation in operations.items():
            worst = len(path) + 100
            for p in operation.get("parameters", []):
                if p["in"] in ("query", "path"):
                    schema = p.get("schema", {})
                    worst += len(p["name"]) + 2 + 12 * schema.get("maxLength", 36)
            assert worst < 16_000, f"{method.upper()} {path}: {worst}"
