"""Deleting a role that anything still uses is refused with ACODE-ROL-005, naming what."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from acode.errors import AcodeError
from roles.models import Role, TransitionRule
from roles.portability.definitions import export_definitions, import_definitions
from roles.services import role_delete
from roles.services import roles as services  # where role_delete asks
from tests.factories import make_role
from tests.sessions_app.jobkit import session_in


def _rules() -> set[str]:
    return {str(rule) for rule in TransitionRule.objects.select_related("from_role", "to_role")}


@pytest.mark.django_db
def test_deleting_a_role_that_rules_reference_is_refused_and_keeps_the_rules(
    boss_api: APIClient,
) -> None:
    rules = _rules()
    response = boss_api.delete("/api/roles/reviewer/")
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "ACODE-ROL-005"
    assert "transition rules" in body["message"] and "nothing was deleted" in body["message"]
    # The seeded workflow templates use the Reviewer too.
    assert set(body["details"]["used_by"]) == {"transition rules", "workflow stages"}
    assert "coder->reviewer" in body["details"]["transition_rules"]
    assert Role.objects.filter(slug="reviewer").exists()
    assert _rules() == rules


@pytest.mark.django_db
def test_deleting_a_parent_role_names_its_children(boss_api: APIClient) -> None:
    parent = make_role("docs", permissions=["read_files"])
    make_role("docs-child", permissions=["read_files"], parent=parent)
    body = boss_api.delete("/api/roles/docs/").json()
    assert body["code"] == "ACODE-ROL-005"
    assert body["details"]["used_by"] == {"child roles": 1}
    assert body["details"]["children"] == ["docs-child"]
    assert "used by 1 child role;" in body["message"]


@pytest.mark.django_db
def test_deleting_a_role_a_session_is_in_names_the_session(boss_api: APIClient, user: Any) -> None:
    session = session_in("explorer", user)
    body = boss_api.delete("/api/roles/explorer/").json()
    assert body["code"] == "ACODE-ROL-005"
    used_by = body["details"]["used_by"]
    assert used_by["agent sessions"] == 1
    assert used_by["role transitions"] == 1
    assert "1 agent session" in body["message"]
    session.refresh_from_db()
    assert session.current_role.slug == "explorer"


@pytest.mark.django_db
def test_a_role_nothing_uses_is_deleted(boss_api: APIClient) -> None:
    make_role("scratch", permissions=["read_files"])
    rules = _rules()
    assert boss_api.delete("/api/roles/scratch/").status_code == 204
    assert not Role.objects.filter(slug="scratch").exists()
    assert _rules() == rules


@pytest.mark.django_db
def test_a_use_that_appears_after_the_check_is_refused_the_same_way(
    monkeypatch: pytest.MonkeyPatch, user: Any
) -> None:
    session_in("explorer", user)
    check = services.role_delete_refusal

    def too_late(role: Role, uses: Any = None) -> AcodeError | None:
        return None if uses is None else check(role, uses)  # the first check saw nothing

    monkeypatch.setattr(services, "role_delete_refusal", too_late)
    rules = _rules()
    with pytest.raises(AcodeError) as info:
        role_delete(role=Role.objects.get(slug="explorer"), actor="test")
    assert info.value.code == "ACODE-ROL-005"
    assert info.value.details["used_by"]["agent sessions"] == 1
    assert Role.objects.filter(slug="explorer").exists()
    assert _rules() == rules


@pytest.mark.django_db
def test_admin_refuses_to_delete_a_role_in_use(admin_client_logged_in: Any) -> None:
    reviewer = Role.objects.get(slug="reviewer")
    rules = _rules()
    url = f"/admin/roles/role/{reviewer.pk}/delete/"
    page = admin_client_logged_in.get(url).content.decode()
    assert "Cannot delete" in page
    assert "ACODE-ROL-005" in page
    admin_client_logged_in.post(url, {"post": "yes"})
    assert Role.objects.filter(slug="reviewer").exists()
    assert _rules() == rules


@pytest.mark.django_db
def test_admin_deletes_a_role_nothing_uses(admin_client_logged_in: Any) -> None:
    scratch = make_role("scratch", permissions=["read_files"])
    response = admin_client_logged_in.post(
        f"/admin/roles/role/{scratch.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 302
    assert not Role.objects.filter(slug="scratch").exists()


@pytest.mark.django_db
def test_replace_import_does_not_remove_a_role_a_session_is_in(user: Any) -> None:
    session_in("explorer", user)
    data = export_definitions()
    data["roles"] = [r for r in data["roles"] if r["slug"] != "explorer"]
    data["transition_rules"] = [
        r for r in data["transition_rules"] if "explorer" not in (r["from"], r["to"])
    ]
    rules = _rules()
    with pytest.raises(AcodeError) as info:
        import_definitions(data, actor="test", replace=True)
    assert info.value.code == "ACODE-ROL-005"
    assert Role.objects.filter(slug="explorer").exists()
    assert _rules() == rules


def test_every_change_to_rules_tools_and_permissions_is_audited(admin_user: Any) -> None:
    from roles.models import Permission, Tool, TransitionRule
    from roles.services import (
        permission_delete,
        permission_save,
        tool_delete,
        tool_save,
        transition_rule_delete,
    )
    from sessions_app.models import AuditEvent, AuditEventType

    permission = permission_save(
        permission=Permission(code="deploy", description="d"), user=admin_user
    )
    tool = Tool.objects.get(name="analyze_diff")
    tool.description = "d"
    tool = tool_save(tool=tool, user=admin_user)
    tool_delete(tool=tool, user=admin_user)
    permission_delete(permission=permission, user=admin_user)
    rule = TransitionRule.objects.filter(from_role__slug="planner", to_role__slug="coder").get()
    transition_rule_delete(rule=rule, user=admin_user)
    rows = AuditEvent.objects.filter(
        event_type=AuditEventType.ROLE_DATA_CHANGED, actor="boss"
    ).order_by("id")
    assert [(r.target, r.result, r.actor) for r in rows] == [
        ("permission deploy", "saved", "boss"),
        ("tool analyze_diff", "saved", "boss"),
        ("tool analyze_diff", "deleted", "boss"),
        ("permission deploy", "deleted", "boss"),
        (f"transition rule {rule}", "deleted", "boss"),
    ]
