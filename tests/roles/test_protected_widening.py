"""A protected role gains nothing by one admin's write elsewhere in role data: a tool
switched on, a permission renamed, an unprotected parent widened or an argument limit
removed is refused whole (ACODE-ROL-015); narrowing passes; a published draft passes."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from acode.errors import AcodeError
from roles.models import McpServer, McpToolDefinition, Permission, Role, RoleVersion, Tool
from roles.portability.definitions import export_definitions, import_definitions
from roles.registry import registry
from roles.services import permission_save, role_write, tool_save
from roles.services.draft_review import role_draft_publish
from roles.services.mcp import mcp_definitions_record, mcp_tool_approve
from tests.roles.test_drafts import _admin

pytestmark = pytest.mark.django_db

LIMIT = {"properties": {"project": {"enum": ["acode"]}}}


def _switch(name: str, enabled: bool) -> None:
    row = Tool.objects.get(name=name)
    row.enabled = enabled
    tool_save(tool=row, actor="test")


def _protect(slug: str) -> None:
    role_write(data={"protected": True}, create=False, slug=slug, actor="test")


def _versions(slug: str) -> int:
    return RoleVersion.objects.filter(role_slug=slug).count()


def _tools(slug: str) -> tuple[str, ...]:
    registry.sync()
    return registry.get(slug).access.tools


def test_switching_a_tool_off_passes_and_back_on_is_refused_for_a_protected_role() -> None:
    _protect("planner")
    assert "grep_search" in _tools("planner")
    _switch("grep_search", False)  # narrowing: never refused
    assert "grep_search" not in _tools("planner")
    versions = _versions("planner")
    with pytest.raises(AcodeError) as refused:
        _switch("grep_search", True)
    assert refused.value.code == "ACODE-ROL-015"
    assert "planner would gain tools grep_search" in refused.value.message
    assert refused.value.details["roles"]["planner"]["tools_gained"] == ["grep_search"]
    assert Tool.objects.get(name="grep_search").enabled is False  # nothing kept
    assert "grep_search" not in _tools("planner") and _versions("planner") == versions


def test_the_same_switch_is_direct_for_an_unprotected_role() -> None:
    _switch("grep_search", False)
    _switch("grep_search", True)
    assert "grep_search" in _tools("planner")


def test_the_admin_form_says_why(admin_client_logged_in: Any) -> None:
    _protect("planner")
    _switch("grep_search", False)
    row = Tool.objects.get(name="grep_search")
    form = {"description": row.description, "enabled": "on", "position": row.position}
    url = f"/admin/roles/tool/{row.pk}/change/"
    response = admin_client_logged_in.post(url, form, follow=True)
    assert response.redirect_chain == [(url, 302)]  # back to the form, with the reason
    assert "ACODE-ROL-015" in response.content.decode()
    assert "Nothing was saved" in response.content.decode()
    assert Tool.objects.get(name="grep_search").enabled is False


def test_an_import_that_widens_a_protected_role_writes_nothing() -> None:
    _protect("planner")
    _switch("grep_search", False)
    document = export_definitions()
    for tool in document["tools"]:
        if tool["name"] == "grep_search":
            tool["enabled"] = True
    document["roles"] = []
    with pytest.raises(AcodeError) as refused:
        import_definitions(document, actor="test")
    assert refused.value.code == "ACODE-ROL-015"
    assert Tool.objects.get(name="grep_search").enabled is False


def test_renaming_a_permission_into_one_a_protected_role_lacks_is_refused() -> None:
    Permission.objects.create(code="scratch", description="unused")
    role_write(data={"slug": "scout", "name": "Scout", "permissions": ["read_files", "scratch"],
                     "protected": True}, create=True, actor="test")  # fmt: skip
    runs = Permission.objects.get(code="execute_commands")
    runs.code = "execute_commands_retired"
    permission_save(permission=runs, actor="test")  # narrows the Coder and Tester: passes
    scratch = Permission.objects.get(code="scratch")
    scratch.code = "execute_commands"
    with pytest.raises(AcodeError) as refused:
        permission_save(permission=scratch, actor="test")
    assert refused.value.code == "ACODE-ROL-015"
    assert "scout would gain tools execute_command" in refused.value.message
    assert Permission.objects.filter(code="scratch").exists()
    assert "execute_command" not in _tools("scout")


def test_widening_an_unprotected_parent_is_refused_when_it_widens_a_protected_child() -> None:
    role_write(data={"slug": "base", "name": "Base", "permissions": ["read_files"]},
               create=True, actor="test")  # fmt: skip
    child = {"slug": "scout", "name": "Scout", "parent": "base",
             "permissions": ["read_files", "execute_commands"], "protected": True}  # fmt: skip
    role_write(data=child, create=True, actor="test")
    capped = _tools("scout")
    assert "execute_command" not in capped  # the parent does not hold the permission
    with pytest.raises(AcodeError) as refused:
        role_write(data={"permissions": ["read_files", "execute_commands"]}, create=False,
                   slug="base", actor="test")  # fmt: skip
    assert refused.value.code == "ACODE-ROL-015"
    assert "scout would gain tools execute_command" in refused.value.message
    assert sorted(Role.objects.get(slug="base").permissions.values_list("code", flat=True)) == [
        "read_files"
    ]
    assert _tools("scout") == capped


def test_a_tool_group_added_to_an_unprotected_parents_allow_list_is_refused_for_its_protected_child() -> (
    None
):
    base = {"slug": "base", "name": "Base", "permissions": ["read_files", "write_files"],
            "allowed_tool_groups": ["file_tools"]}  # fmt: skip
    role_write(data=base, create=True, actor="test")
    child = {"slug": "scout", "name": "Scout", "parent": "base",
             "permissions": ["read_files", "write_files"], "protected": True}  # fmt: skip
    role_write(data=child, create=True, actor="test")
    capped = _tools("scout")
    assert "read_file" in capped and "write_file" not in capped  # the parent's groups narrow
    with pytest.raises(AcodeError) as refused:
        role_write(data={"allowed_tool_groups": ["file_tools", "write_tools"]}, create=False,
                   slug="base", actor="test")  # fmt: skip
    assert refused.value.code == "ACODE-ROL-015"
    assert "scout would gain tools write_file" in refused.value.message
    assert Role.objects.get(slug="base").allowed_tool_groups == ["file_tools"]  # nothing kept
    assert _tools("scout") == capped
    # dropping the parent's allow-list altogether widens too: refused the same way
    with pytest.raises(AcodeError) as dropped:
        role_write(data={"allowed_tool_groups": []}, create=False, slug="base", actor="test")
    assert dropped.value.code == "ACODE-ROL-015" and _tools("scout") == capped


def test_an_argument_limit_of_a_protected_role_can_be_added_not_removed(admin_user: Any) -> None:
    boss = APIClient()
    boss.force_authenticate(admin_user)
    url = "/api/roles/coder/argument-limits/"
    _protect("coder")
    added = boss.post(url, {"tool": "mcp__tracker__issues", "schema": LIMIT}, format="json")
    assert added.status_code == 201, added.json()  # narrowing
    wider = {"properties": {"project": {"enum": ["acode", "docs"]}}}
    changed = boss.patch(url + "mcp__tracker__issues/", {"schema": wider}, format="json")
    assert (changed.status_code, changed.json()["code"]) == (409, "ACODE-ROL-015")
    assert "argument limits of mcp__tracker__issues removed or changed" in changed.json()["message"]
    removed = boss.delete(url + "mcp__tracker__issues/")
    assert (removed.status_code, removed.json()["code"]) == (409, "ACODE-ROL-015")
    assert [lim["schema"] for lim in boss.get(url).json()] == [LIMIT]


def test_the_way_through_is_two_admins_unprotecting_by_a_draft(django_user_model: Any) -> None:
    alice = _admin(django_user_model, "alice", publish=True)
    bob = _admin(django_user_model, "bob", publish=True)
    _protect("planner")
    _switch("grep_search", False)
    client = APIClient()
    client.force_authenticate(alice)
    drafted = client.patch("/api/roles/planner/", {"protected": False}, format="json")
    assert drafted.status_code == 202
    role_draft_publish(draft_id=drafted.json()["id"], user=bob, reason="widen it")
    _switch("grep_search", True)
    assert "grep_search" in _tools("planner")


def test_publishing_a_draft_that_widens_the_protected_role_passes(django_user_model: Any) -> None:
    alice = _admin(django_user_model, "alice", publish=True)
    bob = _admin(django_user_model, "bob", publish=True)
    role_write(data={"slug": "scout", "name": "Scout", "permissions": ["read_files"],
                     "protected": True}, create=True, actor="test")  # fmt: skip
    client = APIClient()
    client.force_authenticate(alice)
    drafted = client.patch(
        "/api/roles/scout/", {"permissions": ["read_files", "execute_commands"]}, format="json"
    )
    assert drafted.status_code == 202
    role_draft_publish(draft_id=drafted.json()["id"], user=bob, reason="reviewed")
    assert "execute_command" in _tools("scout")


def test_approving_an_mcp_tool_a_protected_role_would_get_is_refused() -> None:
    server = McpServer.objects.create(slug="tracker", command=["tracker-mcp"])
    Permission.objects.create(code="mcp-tracker", description="the tracker's tools")
    role_write(data={"slug": "scout", "name": "Scout", "permissions": ["read_files", "mcp-tracker"],
                     "protected": True}, create=True, actor="test")  # fmt: skip
    listed = {"name": "issues", "description": "List issues", "input_schema": {"type": "object"}}
    mcp_definitions_record(server=server, definitions=[listed])  # pending: nobody gets it
    tool = McpToolDefinition.objects.get(server=server, name="issues")
    with pytest.raises(AcodeError) as refused:
        mcp_tool_approve(tool=tool, actor="test")
    assert refused.value.code == "ACODE-ROL-015"
    assert "scout would gain tools mcp__tracker__issues" in refused.value.message
    tool.refresh_from_db()
    assert tool.state == "pending" and not tool.approved_hash
    assert "mcp__tracker__issues" not in _tools("scout")


def test_switching_on_an_mcp_server_a_protected_role_would_get_tools_from_is_refused(
    admin_user: Any,
) -> None:
    server = McpServer.objects.create(slug="tracker", command=["tracker-mcp"], enabled=False)
    Permission.objects.create(code="mcp-tracker", description="the tracker's tools")
    role_write(data={"slug": "scout", "name": "Scout", "permissions": ["read_files", "mcp-tracker"],
                     "protected": True}, create=True, actor="test")  # fmt: skip
    listed = {"name": "issues", "description": "List issues", "input_schema": {"type": "object"}}
    mcp_definitions_record(server=server, definitions=[listed])
    mcp_tool_approve(tool=McpToolDefinition.objects.get(server=server), actor="test")  # off: passes
    boss = APIClient()
    boss.force_authenticate(admin_user)
    response = boss.patch("/api/mcp-servers/tracker/", {"enabled": True}, format="json")
    assert (response.status_code, response.json()["code"]) == (409, "ACODE-ROL-015")
    assert McpServer.objects.get(slug="tracker").enabled is False
