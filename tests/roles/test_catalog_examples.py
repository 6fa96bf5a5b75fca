"""Policy examples when what every role is made of changes: a tool switched on or off, a
permission renamed. Widening a role past an example that says "deny" is refused; narrowing
is saved (never blocked, in an emergency too) and the admin is told which examples now fail."""

from __future__ import annotations

from typing import Any

import pytest

from acode.errors import AcodeError
from roles.models import Permission, Role, Tool
from roles.portability.definitions import export_definitions, import_definitions
from roles.registry import registry
from roles.services import permission_save, role_write, tool_save

pytestmark = pytest.mark.django_db

NO_GREP = {
    "name": "the Planner does not search",
    "tool": "grep_search",
    "arguments": {"pattern": "TODO"},
    "expect": "deny",
    "why": "this team's Planner reads the plan's files only",
}


def _switch(name: str, enabled: bool) -> None:
    row = Tool.objects.get(name=name)
    row.enabled = enabled
    tool_save(tool=row, actor="test")


def _planner_forbids_grep() -> None:
    """grep_search off, and an example in the Planner that it must stay denied."""
    _switch("grep_search", False)
    examples = [*Role.objects.get(slug="planner").examples, NO_GREP]
    role_write(data={"examples": examples}, create=False, slug="planner", actor="test")


def test_switching_on_a_tool_an_example_forbids_is_refused_and_nothing_is_kept() -> None:
    _planner_forbids_grep()
    with pytest.raises(AcodeError) as refused:
        _switch("grep_search", True)
    assert refused.value.code == "ACODE-ROL-008"
    assert "role planner" in refused.value.message
    assert "the Planner does not search" in refused.value.message
    assert Tool.objects.get(name="grep_search").enabled is False
    assert "grep_search" not in registry.get("planner").access.tools


def test_the_admin_form_says_why_a_tool_cannot_be_switched_on(admin_client_logged_in: Any) -> None:
    _planner_forbids_grep()
    row = Tool.objects.get(name="grep_search")
    form = {"description": row.description, "enabled": "on", "position": row.position}
    response = admin_client_logged_in.post(f"/admin/roles/tool/{row.pk}/change/", form)
    assert response.status_code == 200
    text = response.content.decode()
    assert "ACODE-ROL-008" in text and "the Planner does not search" in text
    assert Tool.objects.get(name="grep_search").enabled is False


def test_switching_off_a_tool_examples_need_is_saved_with_a_warning(
    admin_client_logged_in: Any,
) -> None:
    row = Tool.objects.get(name="execute_command")
    form = {"description": row.description, "position": row.position}  # unchecked: off
    response = admin_client_logged_in.post(f"/admin/roles/tool/{row.pk}/change/", form, follow=True)
    assert response.status_code == 200
    assert Tool.objects.get(name="execute_command").enabled is False
    text = response.content.decode()
    assert "policy example(s) now fail" in text
    assert "the Tester runs the test suite" in text


def test_an_import_that_switches_on_a_forbidden_tool_writes_nothing() -> None:
    _planner_forbids_grep()
    document = export_definitions()
    for tool in document["tools"]:
        if tool["name"] == "grep_search":
            tool["enabled"] = True
    document["roles"] = [r for r in document["roles"] if r["slug"] != "planner"]
    with pytest.raises(AcodeError) as refused:
        import_definitions(document, actor="test")
    assert refused.value.code == "ACODE-ROL-008"
    assert Tool.objects.get(name="grep_search").enabled is False


def test_renaming_a_permission_into_one_an_example_forbids_is_refused() -> None:
    # write_files renamed away narrows the Coder (saved); a permission the Planner holds
    # renamed to write_files would let the Planner write, which its example forbids.
    writes = Permission.objects.get(code="write_files")
    writes.code = "write_files_retired"
    permission_save(permission=writes, actor="test")
    scratch = Permission.objects.create(code="scratch", description="unused")
    role_write(data={"allowed_tools": [], "permissions": ["read_files", "scratch"]},
               create=False, slug="planner", actor="test")  # fmt: skip
    scratch.code = "write_files"
    with pytest.raises(AcodeError) as refused:
        permission_save(permission=scratch, actor="test")
    assert refused.value.code == "ACODE-ROL-008"
    assert "the Planner cannot write" in refused.value.message
    assert Permission.objects.filter(code="scratch").exists()
    assert Permission.objects.filter(code="write_files_retired").exists()
