"""Tool groups in a role's allow-list (seed 004's ``file_tools``, ``write_tools``, ...): a
group lets its members through whole, beside the tools the allow-list names; a parent's
groups narrow its children; the policy diff, the API, admin and import/export all see the
groups a role names and the tools they give."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from rest_framework.test import APIClient

from roles.access import compute_access
from roles.models import Permission, Role
from roles.registry import registry
from roles.tools import TOOL_GROUP_NAMES, TOOL_GROUPS, declared_tools, tool_group_of
from tests.roles.test_policy_diff import TOOLS, TRACKER, assert_real, diff, spec, view
from tests.roles.test_registry import _role_form_data

FILE_TOOLS = {"analyze_diff", "find_references", "grep_search", "list_directory", "read_file",
              "search_code", "semantic_search"}  # fmt: skip


def test_every_built_in_tool_is_in_exactly_one_group_and_groups_name_only_declared_tools() -> None:
    declared = declared_tools()
    for name, declaration in declared.items():
        homes = [g.name for g in TOOL_GROUPS if name in g.members]
        assert len(homes) == 1, (name, homes)
        assert tool_group_of(declaration) == homes[0]
    assert {m for g in TOOL_GROUPS for m in g.members} <= set(declared)
    assert tool_group_of(TRACKER) == "mcp_tools"
    assert len(set(TOOL_GROUP_NAMES)) == len(TOOL_GROUP_NAMES)


def test_a_group_lets_its_members_through_and_the_rest_is_withheld_with_the_reason() -> None:
    by_slug = {"coder": spec(allowed_tool_groups=("file_tools",))}
    access = compute_access("coder", by_slug, TOOLS)
    assert set(access.tools) == FILE_TOOLS
    withheld = access.withheld_reason("write_file")
    assert withheld is not None and withheld.reason == "not in the role's tool allow-list"
    # a named tool and a group add up; permissions still decide within them
    both = {"coder": spec(allowed_tools=("write_file",), allowed_tool_groups=("file_tools",))}
    assert set(compute_access("coder", both, TOOLS).tools) == FILE_TOOLS | {"write_file"}
    unheld = {"coder": spec(permissions=("read_files",), allowed_tool_groups=("write_tools",))}
    assert compute_access("coder", unheld, TOOLS).tools == ()


def test_mcp_tools_still_need_their_servers_permission() -> None:
    without = {"coder": spec(allowed_tool_groups=("mcp_tools",))}
    assert compute_access("coder", without, TOOLS).tools == ()
    holding = spec(permissions=("read_files", "mcp-tracker"), allowed_tool_groups=("mcp_tools",))
    assert compute_access("coder", {"coder": holding}, TOOLS).tools == (TRACKER.name,)


def test_a_parents_groups_narrow_its_child() -> None:
    parent = spec("base", allowed_tool_groups=("file_tools", "command_tools"))
    child = spec("coder", parent="base", allowed_tools=("write_file", "read_file"))
    access = compute_access("coder", {"base": parent, "coder": child}, TOOLS)
    assert access.tools == ("read_file",)
    reason = access.withheld_reason("write_file")
    assert reason is not None and reason.reason == "not in parent role base's tool allow-list"


def test_content_names_groups_only_when_set_so_existing_hashes_stay() -> None:
    assert "allowed_tool_groups" not in spec().content()
    grouped = spec(allowed_tool_groups=("write_tools", "file_tools")).content()
    assert grouped["allowed_tool_groups"] == ["file_tools", "write_tools"]


def test_a_group_added_to_an_allow_list_is_a_gain_with_a_real_call_and_removing_it_is_not() -> None:
    old = view([spec(allowed_tool_groups=("file_tools",))], "coder")
    new = view([spec(allowed_tool_groups=("file_tools", "write_tools"))], "coder")
    result = diff(old, new)
    gained = {g.counterexample.get("tool") for g in result.gains}
    assert {"create_file", "delete_file", "write_file"} <= gained, result.gains
    assert_real(result, old, new)
    assert not diff(new, old).widens
    # from no allow-list at all to one group narrows
    assert not diff(view([spec()], "coder"), old).widens


@pytest.mark.django_db
def test_the_api_writes_and_shows_groups_and_refuses_an_unknown_one(boss_api: APIClient) -> None:
    created = boss_api.post(
        "/api/roles/",
        {"slug": "reader", "name": "Reader", "permissions": ["read_files", "write_files"],
         "allowed_tool_groups": ["file_tools"]},
        format="json",
    )  # fmt: skip
    assert created.status_code == 201, created.json()
    assert set(created.json()["tools"]) == FILE_TOOLS
    detail = boss_api.get("/api/roles/reader/").json()
    assert detail["allowed_tool_groups"] == ["file_tools"]
    assert {t["name"]: t["group"] for t in detail["available_tools"]}["read_file"] == "file_tools"
    assert {w["name"] for w in detail["withheld_tools"]} >= {"write_file"}
    tools = {t["name"]: t["group"] for t in boss_api.get("/api/tools/").json()}
    assert tools["execute_command"] == "command_tools" and tools["delegate"] == "spawn_tools"

    bad = boss_api.patch("/api/roles/reader/", {"allowed_tool_groups": ["db_tools"]}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "ACODE-ROL-004", bad.json()
    assert "db_tools" in str(bad.json())
    assert registry.get("reader").spec.allowed_tool_groups == ("file_tools",)  # nothing lost

    widened = boss_api.patch(
        "/api/roles/reader/", {"allowed_tool_groups": ["file_tools", "write_tools"]}, format="json"
    )
    assert widened.status_code == 200, widened.json()
    assert "write_file" in widened.json()["tools"] and widened.json()["version"] == 2
    from drf_spectacular.generators import SchemaGenerator

    schemas = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]
    assert "allowed_tool_groups" in schemas["RoleDetailOutput"]["properties"]
    assert "group" in schemas["ToolOutput"]["properties"]


@pytest.mark.django_db
def test_export_and_import_carry_groups(boss_api: APIClient) -> None:
    boss_api.post("/api/roles/", {"slug": "reader", "name": "Reader", "permissions": ["read_files"],
                                   "allowed_tool_groups": ["file_tools"]}, format="json")  # fmt: skip
    text = boss_api.get("/api/roles/export/").content.decode()
    roles = {r["slug"]: r for r in yaml.safe_load(text)["roles"]}
    assert roles["reader"]["allowed_tool_groups"] == ["file_tools"]
    assert "allowed_tool_groups" not in roles["coder"]  # unset: not named
    changed = text.replace("- file_tools", "- spawn_tools")
    response = boss_api.post("/api/roles/import/", changed, content_type="application/yaml")
    assert response.status_code == 200, response.json()
    assert registry.get("reader").spec.allowed_tool_groups == ("spawn_tools",)
    unknown = text.replace("- file_tools", "- system_tools")
    refused = boss_api.post("/api/roles/import/", unknown, content_type="application/yaml")
    assert refused.status_code == 400 and "system_tools" in str(refused.json())
    assert registry.get("reader").spec.allowed_tool_groups == ("spawn_tools",)


@pytest.mark.django_db
def test_admin_offers_groups_with_their_tools_and_saves_them(admin_client_logged_in: Any) -> None:
    reader = Role.objects.create(slug="reader", name="Reader", prompt_key="reader")
    reader.permissions.set(Permission.objects.filter(code__in=["read_files", "write_files"]))
    page = admin_client_logged_in.get(f"/admin/roles/role/{reader.pk}/change/").content.decode()
    assert 'value="file_tools"' in page and "create_file, delete_file, write_file" in page
    form = _role_form_data(reader)
    form["allowed_tool_groups"] = ["write_tools"]
    response = admin_client_logged_in.post(f"/admin/roles/role/{reader.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    role = registry.get("reader")
    assert role.spec.allowed_tool_groups == ("write_tools",)
    assert role.access.tools == ("write_file",)  # create and delete need their permissions
    form["allowed_tool_groups"] = ["no_such_group"]
    refused = admin_client_logged_in.post(f"/admin/roles/role/{reader.pk}/change/", form)
    assert refused.status_code == 200 and "no_such_group" in refused.content.decode()


@pytest.mark.django_db
def test_the_dashboards_tool_matrix_names_each_tools_group(client: Any, user: Any) -> None:
    client.force_login(user)
    page = client.get("/roles/").content.decode()
    assert "in <code>file_tools</code> · needs" in page
    assert "in <code>spawn_tools</code>" in page
