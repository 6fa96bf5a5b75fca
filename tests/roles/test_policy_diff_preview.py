"""Preview shows the policy diff beside the replay: POST /api/roles/<name>/replay/ (and so
``acode role diff``), the admin's "Preview impact" and a draft's page, before a second
admin publishes it. The counterexamples shown are real: decided again under the stored
role and the draft."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from roles.commands.workspace import KnownWorkspace
from roles.decision import HostFacts, decide
from roles.models import Permission, Role
from roles.registry import registry
from roles.services.replay import role_draft
from tests.roles.test_drafts import ROLE, _admin, _api
from tests.roles.test_registry import _role_form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_api(admin_user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


def test_the_replay_api_shows_what_a_draft_grants_with_real_counterexamples(
    admin_api: APIClient,
) -> None:
    draft = {"permissions": ["read_files", "execute_commands", "write_files"],
             "write_paths": ["tests/**", "docs/*.md"]}  # fmt: skip
    report = admin_api.post("/api/roles/tester/replay/", {"draft": draft}, format="json").json()
    diff = report["diff"]
    assert diff["role"] == "tester" and diff["widens"] is True
    by_dimension = {g["dimension"]: g for g in diff["gains"]}
    assert {"effective_permissions", "effective_tools"} <= set(by_dimension)
    call = by_dimension["effective_tools"]["counterexample"]
    assert call["kind"] == "call" and (call["old"], call["new"]) == ("deny", "allow")
    registry.sync()
    stored = registry.get("tester")
    drafted = role_draft(slug="tester", data=draft).role
    decided = [decide(r, call["tool"], call["arguments"], host=HostFacts(),
                      workspace=KnownWorkspace()).allowed for r in (stored, drafted)]  # fmt: skip
    assert decided == [False, True]
    narrowing = admin_api.post(
        "/api/roles/tester/replay/", {"draft": {"max_llm_calls": 1}}, format="json"
    ).json()["diff"]
    assert narrowing["widens"] is False and narrowing["gains"] == []


def test_a_parent_draft_shows_what_the_roles_below_it_gain(admin_api: APIClient) -> None:
    admin_api.post("/api/roles/", {"slug": "base", "name": "Base", "permissions": ["read_files"]},
                   format="json")  # fmt: skip
    child = {"slug": "scout", "name": "Scout", "parent": "base",
             "permissions": ["read_files", "network", "execute_commands"]}  # fmt: skip
    assert admin_api.post("/api/roles/", child, format="json").status_code == 201
    body = {"draft": {"permissions": ["read_files", "network"]}}
    report = admin_api.post("/api/roles/base/replay/", body, format="json").json()
    [below] = report["diff_below"]
    assert below["role"] == "scout"
    assert [g["what"] for g in below["gains"]] == ["gain permission network"]


def test_admin_preview_impact_shows_the_diff(admin_client_logged_in: Any) -> None:
    tester = Role.objects.get(slug="tester")
    form = _role_form_data(tester)
    form["permissions"] = [*form["permissions"], Permission.objects.get(code="write_files").pk]  # type: ignore[misc]
    form["write_paths"] = "src/**\ntests/**"
    html = admin_client_logged_in.post(
        f"/admin/roles/role/{tester.pk}/preview-impact/", form
    ).content.decode()
    assert 'id="policy-diff-tester"' in html
    assert "gain permission write_files" in html and "gain tool write_file" in html


def test_a_drafts_page_shows_the_diff_to_the_second_admin(django_user_model: Any) -> None:
    alice = _admin(django_user_model, "alice", publish=True)
    bob = _admin(django_user_model, "bob", publish=True)
    _api(alice).patch(f"/api/roles/{ROLE}/", {"protected": True}, format="json")
    drafted = _api(alice).patch(f"/api/roles/{ROLE}/", {"max_llm_calls": 500}, format="json").json()
    client = APIClient()
    client.force_login(bob)
    page = client.get(f"/admin/roles/roledraft/{drafted['id']}/change/").content.decode()
    assert f'id="policy-diff-{ROLE}"' in page
    assert "have max_llm_calls raised from 15 to 500" in page
    assert "lose its protection" not in page
