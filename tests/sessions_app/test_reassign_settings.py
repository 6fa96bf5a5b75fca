"""The settings behind reassign-when-blocked and a different reviewer (issue 39): a role's
ordered ``reassign_models`` (admin, API, YAML, the role diff) must name model endpoints; a
template's ``review_model_differs`` (admin, API, YAML round trip)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from roles.decision.diff import policy_diff
from roles.models import EndpointKind, ModelEndpoint, Role
from roles.portability.document import dump_yaml, load_yaml
from roles.registry import registry
from sessions_app.models import WorkflowTemplate
from sessions_app.services.runs.portability import workflows_export, workflows_import
from tests.roles.test_admin import _new_role_form
from tests.sessions_app.test_workflows_portability import _admin_form

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(admin_user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(admin_user)
    client.force_login(admin_user)  # and the pages
    return client


def endpoints(*names: str) -> None:
    for name in names:
        ModelEndpoint.objects.create(name=name, kind=EndpointKind.SCRIPTED, script=[])


def test_a_roles_reassign_models_are_ordered_endpoint_names_through_the_api(
    staff: APIClient,
) -> None:
    refused = staff.patch("/api/roles/coder/", {"reassign_models": ["big"]}, format="json")
    assert refused.status_code == 404 and refused.json()["code"] == "ACODE-API-404"
    assert "reassign_models 'big' names no model endpoint" in refused.json()["message"]
    blank = staff.patch("/api/roles/coder/", {"reassign_models": [""]}, format="json")
    assert blank.status_code == 400

    endpoints("big", "bigger")
    hash_before = registry.get("coder").content_hash
    before = registry.get("coder").spec.content()
    saved = staff.patch("/api/roles/coder/", {"reassign_models": ["bigger", "big"]}, format="json")
    assert saved.status_code == 200, saved.content
    assert saved.json()["reassign_models"] == ["bigger", "big"]  # in the order given
    assert registry.get("coder").spec.reassign_models == ("bigger", "big")
    assert registry.get("coder").content_hash != hash_before  # a new version of the role
    assert staff.get("/api/roles/reviewer/").json()["reassign_models"] == []

    page = staff.get("/roles/").content.decode()  # the roles page shows the route
    assert "When a run step is blocked" in page and "<code>bigger</code>, then <code>big" in page

    # The policy diff lists it as a changed field that grants nothing on its own.
    diff = policy_diff(before, registry.get("coder").spec.content())
    assert diff.changed == ("reassign_models",) and not diff.widens


def test_reassign_models_round_trip_through_the_roles_yaml(staff: APIClient) -> None:
    endpoints("big")
    Role.objects.filter(slug="coder").update(reassign_models=["big"])
    registry.invalidate()
    document = load_yaml(staff.get("/api/roles/export/").content.decode())
    coder = next(r for r in document["roles"] if r["slug"] == "coder")
    assert coder["reassign_models"] == ["big"]
    tester = next(r for r in document["roles"] if r["slug"] == "tester")
    assert "reassign_models" not in tester  # a role without any keeps its content as before

    coder["reassign_models"] = ["nope"]
    refused = staff.post("/api/roles/import/", dump_yaml(document), content_type="application/yaml")
    assert refused.status_code == 409 and "reassign_models 'nope'" in refused.content.decode()
    coder["reassign_models"] = []
    done = staff.post("/api/roles/import/", dump_yaml(document), content_type="application/yaml")
    assert done.status_code == 200, done.content
    assert Role.objects.get(slug="coder").reassign_models == []


def test_admin_edits_reassign_models_one_per_line(admin_client_logged_in: Any) -> None:
    url = "/admin/roles/role/add/"
    form = _new_role_form(name="Writer", slug="writer", prompt_key="writer")
    refused = admin_client_logged_in.post(url, {**form, "reassign_models": "nope"})
    assert "reassign_models &#x27;nope&#x27; names no model endpoint" in refused.content.decode()
    endpoints("big", "bigger")
    saved = admin_client_logged_in.post(url, {**form, "reassign_models": "bigger\nbig\n"})
    assert saved.status_code == 302, saved.content.decode()[-2000:]
    assert Role.objects.get(slug="writer").reassign_models == ["bigger", "big"]


def test_review_model_differs_round_trips_through_yaml_and_admin(
    admin_client_logged_in: Any,
) -> None:
    document = workflows_export()
    medium = next(t for t in document["templates"] if t["slug"] == "medium")
    low = next(t for t in document["templates"] if t["slug"] == "low")
    assert (medium["review_model_differs"], low["review_model_differs"]) == (True, False)
    low["review_model_differs"] = True
    workflows_import(document, replace=False, actor="alice")
    assert WorkflowTemplate.objects.get(slug="low").review_model_differs is True
    assert workflows_export() == document
    del low["review_model_differs"]  # left out: not required
    workflows_import(document, replace=False, actor="alice")
    assert WorkflowTemplate.objects.get(slug="low").review_model_differs is False

    url = "/admin/sessions_app/workflowtemplate/add/"
    form = _admin_form([("code", "coder"), ("review", "reviewer")])
    page = admin_client_logged_in.get(url).content.decode()
    assert 'name="review_model_differs"' in page
    saved = admin_client_logged_in.post(url, {**form, "review_model_differs": "on"})
    assert saved.status_code == 302, saved.content.decode()[-2000:]
    assert WorkflowTemplate.objects.get(slug="ordered").review_model_differs is True
