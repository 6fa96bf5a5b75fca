"""Tools are declared once, in code: rows only enable, describe and order them."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from acode.errors import AcodeError
from roles.models import Tool
from roles.portability.definitions import SEED_FILE, export_definitions, import_definitions
from roles.portability.document import load_yaml
from roles.registry import registry
from roles.services import role_write, tool_save
from roles.tools import BUILTIN_TOOLS, declared_tools
from roles.writes import CHANGE_PERMISSIONS, WritePolicy, path_allowed

SEED = load_yaml(SEED_FILE.read_text(encoding="utf-8"))


def test_every_declared_schema_is_a_json_schema_of_an_object() -> None:
    for tool in BUILTIN_TOOLS:
        Draft202012Validator.check_schema(dict(tool.argument_schema))
        assert tool.argument_schema["type"] == "object", tool.name


def test_declared_permissions_are_seeded_and_a_writing_tool_needs_its_change() -> None:
    seeded = {p["code"] for p in SEED["permissions"]}
    for tool in BUILTIN_TOOLS:
        assert tool.permissions <= seeded, tool.name
        if tool.writes:
            assert CHANGE_PERMISSIONS[tool.writes] in tool.permissions, tool.name
            assert tool.path == "file", tool.name


def test_the_seed_enables_every_declared_tool_and_defines_none() -> None:
    assert [t["name"] for t in SEED["tools"]] == sorted(declared_tools())
    assert all(set(t) <= {"name", "description", "enabled", "position"} for t in SEED["tools"])


@pytest.mark.django_db
def test_a_row_cannot_widen_what_a_tool_needs() -> None:
    row = Tool.objects.get(name="write_file")
    row.description = "Edit anything"
    tool_save(tool=row, actor="test")
    registry.sync()
    spec = registry.tool("write_file")
    assert spec is not None and spec.description == "Edit anything"
    assert spec.required_permissions == ("read_files", "write_files")
    assert spec.argument_schema is declared_tools()["write_file"].argument_schema
    assert "write_file" not in registry.access("planner").tools


@pytest.mark.django_db
def test_an_import_cannot_give_a_tool_permissions_or_a_schema() -> None:
    data = export_definitions()
    entry = next(t for t in data["tools"] if t["name"] == "write_file")
    entry["required_permissions"] = ["read_files"]
    entry["argument_schema"] = {}
    with pytest.raises(AcodeError) as info:
        import_definitions(data, actor="test")
    assert info.value.code == "ACODE-IMP-001"
    assert "required_permissions" in info.value.message
    assert registry.tool("write_file").required_permissions == ("read_files", "write_files")


@pytest.mark.django_db
def test_a_row_or_import_for_a_tool_acode_lacks_is_refused() -> None:
    with pytest.raises(AcodeError) as saved:
        tool_save(tool=Tool(name="deploy_it"), actor="test")
    assert saved.value.code == "ACODE-ROL-004"
    data = export_definitions()
    data["tools"].append({"name": "deploy_it", "enabled": True})
    with pytest.raises(AcodeError) as imported:
        import_definitions(data, actor="test")
    assert imported.value.code == "ACODE-IMP-003"
    assert any("deploy_it: acode has no such tool" in p for p in imported.value.details["problems"])
    assert not Tool.objects.filter(name="deploy_it").exists()


@pytest.mark.django_db
def test_a_disabled_or_missing_row_withholds_the_tool_from_every_role() -> None:
    row = Tool.objects.get(name="grep_search")
    row.enabled = False
    tool_save(tool=row, actor="test")
    Tool.objects.get(name="read_file").delete()
    registry.sync()
    for role in registry.list_roles():
        assert not {"grep_search", "read_file"} & set(role.access.tools), role.slug
        assert role.access.declaration("grep_search") is None
    withheld = registry.access("planner").withheld_reason("read_file")
    assert withheld is not None and withheld.reason == "tool is disabled"


@pytest.mark.django_db
def test_rows_order_what_a_role_is_offered_not_its_content() -> None:
    before = registry.get("planner").content_hash
    row = Tool.objects.get(name="read_file")
    row.position = 0
    tool_save(tool=row, actor="test")
    others = ("find_references", "grep_search", "list_directory", "search_code", "semantic_search")
    for name in others:
        other = Tool.objects.get(name=name)
        other.position = 5
        tool_save(tool=other, actor="test")
    registry.sync()
    offered = [t.name for t in registry.effective_tools("planner")]
    assert offered == ["read_file", *others]
    assert registry.get("planner").content_hash == before  # order is presentation only


@pytest.mark.django_db
def test_an_allow_list_names_rows_that_exist() -> None:
    Tool.objects.get(name="analyze_diff").delete()
    with pytest.raises(AcodeError) as info:
        role_write(
            data={"allowed_tools": ["analyze_diff"]}, create=False, slug="planner", actor="test"
        )
    assert info.value.code == "ACODE-API-404"


# -- the one write-path rule -------------------------------------------------------------
ALL_CHANGES = frozenset(CHANGE_PERMISSIONS.values())


@pytest.mark.parametrize(
    ("change", "permissions", "rule"),
    [
        ("created", {"create_files"}, "write_paths: anywhere"),
        ("created", {"write_files", "delete_files"}, "write_permission"),
        ("modified", {"write_files"}, "write_paths: anywhere"),
        ("modified", {"create_files", "delete_files"}, "write_permission"),
        ("deleted", {"delete_files"}, "write_paths: anywhere"),
        ("deleted", {"write_files", "create_files"}, "write_permission"),
    ],
)
def test_each_change_needs_its_own_permission(
    change: str, permissions: set[str], rule: str
) -> None:
    decided = WritePolicy(frozenset(permissions)).check("docs/a.md", change=change)
    assert decided.rule == rule


def test_write_globs_keep_their_meaning() -> None:
    assert path_allowed("docs/a/b.md", ["docs/**"]) and not path_allowed("docs", ["docs/**"])
    assert path_allowed("a.md", ["*.md"]) and not path_allowed("docs/a.md", ["*.md"])
    assert path_allowed("a/b/c.py", ["**/*.py"]) and path_allowed("c.py", ["**/*.py"])
    assert path_allowed("src", ["src"]) and not path_allowed("src/x.py", ["src"])
    assert path_allowed("pages/[id].tsx", ["pages/[id].tsx"])
    assert not path_allowed("pages/i.tsx", ["pages/[id].tsx"])  # brackets are literal
    assert path_allowed(".env", ["*"]) and not path_allowed("a/.env", ["*"])


def test_a_refusal_names_its_rule() -> None:
    policy = WritePolicy(ALL_CHANGES, ("docs/**",), "Docs")
    assert policy.check(".GIT/config", change="modified").rule == "git_dir"
    assert policy.check("src/a.py", change="created").rule == "write_paths"
    assert "Role Docs may write only docs/**" in policy.check("src/a.py", change="deleted").reason


def test_a_command_may_write_when_any_change_is_allowed() -> None:
    for permission in CHANGE_PERMISSIONS.values():
        assert WritePolicy(frozenset({permission, "read_files"})).may_write
    assert not WritePolicy(frozenset({"read_files", "execute_commands"})).may_write
