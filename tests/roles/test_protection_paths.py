"""Every way one admin widened a protected role in the issue's check is refused whole
(ACODE-ROL-015, naming the gain): the parent given ``network``, ``read_secrets`` or
``create_files``, the parent given ``delete_files`` while the delete tool is off, a
permission renamed into ``network``, an MCP tool approved from the admin (a message, not a
500), an MCP server's grants widened, a transition rule into the role. Narrowing passes."""

from __future__ import annotations

from typing import Any

import pytest

from acode.errors import AcodeError
from roles.models import McpServer, McpToolDefinition, Permission, Role, Tool, TransitionRule
from roles.registry import registry
from roles.services import permission_save, role_write, tool_save, transition_rule_save
from roles.services.mcp import mcp_definitions_record, mcp_server_save

pytestmark = pytest.mark.django_db

ALL = ["read_files", "write_files", "create_files", "delete_files", "execute_commands",
       "network", "read_secrets"]  # fmt: skip


def _family(parent: list[str], *, child: list[str] | None = None) -> None:
    """An unprotected parent ``base`` and its protected child ``scout``."""
    for code in {*parent, *(child or ALL)}:
        Permission.objects.get_or_create(code=code, defaults={"description": code})
    role_write(data={"slug": "base", "name": "Base", "permissions": parent}, create=True,
               actor="test")  # fmt: skip
    role_write(data={"slug": "scout", "name": "Scout", "parent": "base", "protected": True,
                     "permissions": child or ALL, "write_paths": ["src/**"]},
               create=True, actor="test")  # fmt: skip


def _parent_given(*codes: str) -> AcodeError:
    now = list(Role.objects.get(slug="base").permissions.values_list("code", flat=True))
    with pytest.raises(AcodeError) as refused:
        role_write(data={"permissions": [*now, *codes]}, create=False, slug="base", actor="test")
    assert refused.value.code == "ACODE-ROL-015"
    assert sorted(Role.objects.get(slug="base").permissions.values_list("code", flat=True)) == (
        sorted(now)
    )  # nothing kept
    return refused.value


def _gains(error: AcodeError, slug: str = "scout") -> list[dict[str, Any]]:
    gains: list[dict[str, Any]] = error.details["roles"][slug]["gains"]
    return gains


def _effective(slug: str) -> frozenset[str]:
    registry.sync()
    return registry.get(slug).access.permissions


@pytest.mark.parametrize("code", ["network", "read_secrets"])
def test_giving_the_parent_a_permission_the_child_holds_is_refused(code: str) -> None:
    _family(["read_files", "execute_commands"])
    error = _parent_given(code)
    assert f"scout would gain permission {code}" in error.message
    assert [g["what"] for g in _gains(error)] == [f"gain permission {code}"]
    assert code not in _effective("scout")


def test_giving_the_parent_create_files_is_refused_though_no_tool_is_gained() -> None:
    Tool.objects.filter(name="create_file").update(enabled=False)
    _family(["read_files", "execute_commands", "write_files"])
    error = _parent_given("create_files")
    (gain,) = _gains(error)
    assert gain["counterexample"] == {"kind": "change", "path": "src/0", "change": "created",
                                      "old": "deny", "new": "allow"}  # fmt: skip
    assert "created 'src/0' deny -> allow" in error.message


def test_giving_the_parent_delete_files_while_the_delete_tool_is_off_is_refused() -> None:
    row = Tool.objects.get(name="delete_file")
    row.enabled = False
    tool_save(tool=row, actor="test")
    _family(["read_files", "execute_commands", "write_files"])
    error = _parent_given("delete_files")
    assert [g["counterexample"].get("change") for g in _gains(error)] == ["deleted"]


def test_renaming_a_permission_into_network_is_refused() -> None:
    Permission.objects.filter(code="network").delete()
    Permission.objects.create(code="scratch", description="unused")
    _family(["read_files", "scratch"], child=["read_files", "scratch"])
    scratch = Permission.objects.get(code="scratch")
    scratch.code = "network"
    with pytest.raises(AcodeError) as refused:
        permission_save(permission=scratch, actor="test")
    assert refused.value.code == "ACODE-ROL-015"
    assert "gain permission network" in refused.value.message
    assert Permission.objects.filter(code="scratch").exists()


def test_narrowing_the_parent_passes() -> None:
    _family(["read_files", "execute_commands", "network", "write_files"])
    role_write(data={"permissions": ["read_files"]}, create=False, slug="base", actor="test")
    assert _effective("scout") == {"read_files"}


def test_a_transition_rule_into_a_protected_role_is_refused() -> None:
    _family(["read_files"])
    rule = TransitionRule(from_role=Role.objects.get(slug="planner"),
                          to_role=Role.objects.get(slug="scout"))  # fmt: skip
    with pytest.raises(AcodeError) as refused:
        transition_rule_save(rule=rule, actor="test")
    assert refused.value.code == "ACODE-ROL-015"
    assert "be entered from planner (none)" in refused.value.message
    assert not TransitionRule.objects.filter(to_role__slug="scout").exists()


def _tracker(**fields: Any) -> McpServer:
    server = McpServer.objects.create(slug="tracker", transport="http",
                                      url="https://tracker.example.com/mcp", **fields)  # fmt: skip
    Permission.objects.get_or_create(code="mcp-tracker", defaults={"description": "tracker"})
    listed = {"name": "issues", "description": "List issues", "input_schema": {"type": "object"}}
    mcp_definitions_record(server=server, definitions=[listed])
    return server


def test_widening_the_grants_of_a_protected_roles_mcp_server_is_refused() -> None:
    server = _tracker()
    tool = McpToolDefinition.objects.get(server=server)
    from roles.services.mcp import mcp_tool_approve

    mcp_tool_approve(tool=tool, actor="test")  # nobody protected holds the permission yet
    role_write(data={"slug": "scout", "name": "Scout", "protected": True,
                     "permissions": ["read_files", "mcp-tracker"]}, create=True, actor="test")  # fmt: skip
    server.url = "https://elsewhere.example.net/mcp"
    with pytest.raises(AcodeError) as refused:
        mcp_server_save(server=server, actor="test")
    assert refused.value.code == "ACODE-ROL-015"
    assert "use MCP server tracker at https://elsewhere.example.net/mcp" in (refused.value.message)
    assert McpServer.objects.get(slug="tracker").url == "https://tracker.example.com/mcp"
    server.refresh_from_db()
    server.description = "the tracker"  # no grant moves: passes
    mcp_server_save(server=server, actor="test")


def test_the_admin_approve_action_says_why_instead_of_a_500(admin_client_logged_in: Any) -> None:
    server = _tracker()
    role_write(data={"slug": "scout", "name": "Scout", "protected": True,
                     "permissions": ["read_files", "mcp-tracker"]}, create=True, actor="test")  # fmt: skip
    tool = McpToolDefinition.objects.get(server=server)
    response = admin_client_logged_in.post(
        "/admin/roles/mcptooldefinition/",
        {"action": "approve", "_selected_action": [tool.pk], "confirm": "yes",
         f"hash-{tool.pk}": tool.live_hash},
        follow=True,
    )  # fmt: skip
    assert response.status_code == 200
    page = response.content.decode()
    assert "ACODE-ROL-015" in page and "scout would gain tools mcp__tracker__issues" in page
    tool.refresh_from_db()
    assert tool.state == "pending"


def test_every_role_data_admin_page_says_a_refusal_in_words(admin_client_logged_in: Any) -> None:
    _family(["read_files"])
    planner, scout = Role.objects.get(slug="planner"), Role.objects.get(slug="scout")
    response = admin_client_logged_in.post(
        "/admin/roles/transitionrule/add/",
        {"from_role": planner.pk, "to_role": scout.pk, "precondition": "none", "explanation": ""},
        follow=True,
    )
    assert response.status_code == 200
    assert "ACODE-ROL-015" in response.content.decode()
    assert not TransitionRule.objects.filter(to_role=scout).exists()


def test_the_permission_admin_says_why_a_rename_is_refused(admin_client_logged_in: Any) -> None:
    Permission.objects.filter(code="network").delete()
    Permission.objects.create(code="scratch", description="unused")
    _family(["read_files", "scratch"], child=["read_files", "scratch"])
    scratch = Permission.objects.get(code="scratch")
    url = f"/admin/roles/permission/{scratch.pk}/change/"
    response = admin_client_logged_in.post(
        url, {"code": "network", "description": "unused"}, follow=True
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "ACODE-ROL-015" in page and "gain permission network" in page
    assert Permission.objects.filter(code="scratch").exists()


def test_the_mcp_server_admin_says_why_a_wider_grant_is_refused(
    admin_client_logged_in: Any,
) -> None:
    server = _tracker()
    from roles.services.mcp import mcp_tool_approve

    mcp_tool_approve(tool=McpToolDefinition.objects.get(server=server), actor="test")
    role_write(data={"slug": "scout", "name": "Scout", "protected": True,
                     "permissions": ["read_files", "mcp-tracker"]}, create=True, actor="test")  # fmt: skip
    form = {"slug": "tracker", "description": "", "transport": "http", "command": "[]",
            "read_only_paths": "[]", "url": "https://tracker.example.com/mcp",
            "env_secrets": "{}", "header_secrets": "{}", "allow_private_network": "on",
            "call_timeout_seconds": 60, "max_output_chars": 65536, "enabled": "on"}  # fmt: skip
    url = f"/admin/roles/mcpserver/{server.pk}/change/"
    response = admin_client_logged_in.post(url, form, follow=True)
    assert response.status_code == 200
    page = response.content.decode()
    assert "ACODE-ROL-015" in page, page[:3000]
    assert "use MCP server tracker with private networks allowed" in page
    assert McpServer.objects.get(slug="tracker").allow_private_network is False
