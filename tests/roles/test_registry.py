from __future__ import annotations

import json
import logging

import pytest

from acode.errors import AcodeError
from roles.models import Permission, Role
from roles.registry import RoleRegistry, registry
from tests.conftest import spawn_python
from tests.factories import make_role

# Spec 000's Planner tools (read_file, list_directory, grep_search, semantic_search) and
# spec 001's symbol tools (issue 38).
READ_TOOLS = [
    "find_references", "grep_search", "list_directory", "read_file", "search_code",
    "semantic_search",
]  # fmt: skip


@pytest.mark.django_db
def test_seeded_roles_are_listed_with_spec_tools() -> None:
    names = [r.name for r in registry.list_roles()]
    assert names[:4] == ["Default", "Planner", "Coder", "Reviewer"]
    assert {"Explorer", "Tester"} <= set(names)
    assert list(registry.access("Planner").tools) == READ_TOOLS
    assert set(registry.access("Coder").tools) >= {
        "read_file",
        "write_file",
        "create_file",
        "delete_file",
        "execute_command",
        "run_tests",
        "list_directory",
    }
    assert set(registry.access("Reviewer").tools) == {
        "read_file",
        "list_directory",
        "analyze_diff",
        "grep_search",
        "submit_review",
        "semantic_search",
        "search_code",
        "find_references",
    }
    assert len(registry.access("Default").tools) == 13
    tester = registry.get("tester")
    assert "write_file" not in tester.access.tools
    assert {"program": "python", "module": "pytest"}.items() <= tester.spec.command_patterns[
        1
    ].items()


@pytest.mark.django_db
def test_spec_role_definitions() -> None:
    planner = registry.get("Planner").spec
    assert planner.prompt_key == "planner"
    assert planner.context_strategy == "broad"
    assert "Cannot modify files (read-only access)" in planner.constraints
    assert "Cannot execute commands" in planner.constraints
    coder = registry.get("Coder").spec
    assert coder.context_strategy == "focused"
    assert any("plan" in c for c in coder.constraints)
    assert registry.get("Reviewer").spec.context_strategy == "change_focused"
    assert registry.get("Default").spec.prompt_key == "system"


@pytest.mark.django_db
def test_lookup_is_case_insensitive_by_slug_or_name() -> None:
    assert registry.get("PLANNER").slug == "planner"
    assert registry.get(" coder ").name == "Coder"
    make_role("docs-writer", name="Docs Writer", permissions=["read_files"])
    assert registry.get("docs writer").slug == "docs-writer"
    assert registry.get("Docs-Writer").name == "Docs Writer"


@pytest.mark.django_db
def test_unknown_role_raises_rol_001_listing_known_roles() -> None:
    with pytest.raises(AcodeError) as info:
        registry.get("Architect")
    assert info.value.code == "ACODE-ROL-001"
    assert "Planner" in info.value.message
    assert "Default" in info.value.details["known_roles"]


@pytest.mark.django_db
def test_stored_unknown_value_resolves_to_default_with_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="roles.registry"):
        role = registry.resolve("architect")
    assert role.slug == "default"
    assert "architect" in caplog.text


@pytest.mark.django_db
def test_child_role_never_exceeds_parent() -> None:
    reader = make_role("reader", permissions=["read_files"])
    child = make_role(
        "greedy", permissions=["read_files", "write_files", "execute_commands"], parent=reader
    )
    access = registry.access(child.slug)
    assert set(access.tools) == {"analyze_diff", *READ_TOOLS}
    withheld = {w.name: w.reason for w in access.withheld}
    assert withheld["write_file"] == "permission write_files not held by parent role reader"
    assert "execute_commands" in withheld["execute_command"]
    assert access.permissions == frozenset({"read_files"})


@pytest.mark.django_db
def test_child_also_bound_by_parent_allow_list() -> None:
    parent = make_role("narrow", permissions=["read_files"], allowed_tools=["read_file"])
    child = make_role("narrow-child", permissions=["read_files"], parent=parent)
    assert registry.access(child.slug).tools == ("read_file",)


@pytest.mark.django_db
def test_withheld_tools_name_the_missing_permission() -> None:
    withheld = {w.name: w for w in registry.access("planner").withheld}
    assert withheld["write_file"].missing_permissions == ("write_files",)
    assert withheld["write_file"].reason == "missing permission write_files"
    assert withheld["analyze_diff"].reason == "not in the role's tool allow-list"


@pytest.mark.django_db
def test_disabled_tool_is_withheld_from_everyone() -> None:
    from roles.models import Tool

    Tool.objects.filter(name="grep_search").update(enabled=False)
    Tool.objects.get(name="grep_search").save()  # a save through the ORM moves the stamp
    registry.sync()
    assert "grep_search" not in registry.access("default").tools
    withheld = registry.access("default").withheld_reason("grep_search")
    assert withheld is not None and withheld.reason == "tool is disabled"


@pytest.mark.django_db
def test_second_registry_instance_sees_change_on_next_read() -> None:
    other = RoleRegistry(max_age=3600)
    assert "write_file" in other.access("coder").tools
    coder = Role.objects.get(slug="coder")
    coder.permissions.remove(Permission.objects.get(code="write_files"))
    other.sync()  # what a request, task or executor does before reading
    assert "write_file" not in other.access("coder").tools


@pytest.mark.django_db
def test_transition_rules_include_implicit_return_to_default() -> None:
    rules = {r.to_slug: r for r in registry.rules_from("planner")}
    assert rules["coder"].precondition == "plan_exists"
    assert rules["default"].implicit
    assert registry.rule("coder", "reviewer").precondition == "changes_exist"
    assert registry.rule("planner", "reviewer") is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_admin_change_is_seen_by_another_process(admin_user: object, client: object) -> None:
    proc = spawn_python(
        "from roles.registry import registry\n"
        "import sys\n"
        "print(','.join(registry.access('coder').tools), flush=True)\n"
        "sys.stdin.readline()\n"
        "registry.sync()\n"
        "print(','.join(registry.access('coder').tools), flush=True)\n"
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        before = proc.stdout.readline().strip().split(",")
        assert "write_file" in before
        client.force_login(admin_user)
        coder = Role.objects.get(slug="coder")
        form = _role_form_data(coder)
        form["permissions"] = [str(p.pk) for p in coder.permissions.exclude(code="write_files")]
        response = client.post(f"/admin/roles/role/{coder.pk}/change/", form)
        assert response.status_code == 302, response.content.decode()[:2000]
        proc.stdin.write("go\n")
        proc.stdin.flush()
        after = proc.stdout.readline().strip().split(",")
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.kill()
    assert "write_file" not in after
    assert "read_file" in after


def _role_form_data(role: Role) -> dict[str, object]:
    return {
        "name": role.name,
        "slug": role.slug,
        "description": role.description,
        "colour": role.colour,
        "parent": role.parent_id or "",
        "permissions": [str(p.pk) for p in role.permissions.all()] if role.pk else [],
        "allowed_tools": [str(t.pk) for t in role.allowed_tools.all()] if role.pk else [],
        "allowed_tool_groups": list(role.allowed_tool_groups or []),
        "write_paths": "\n".join(role.write_paths),
        "command_patterns": "\n".join(
            json.dumps(r, sort_keys=True) if isinstance(r, dict) else r
            for r in role.command_patterns
        ),
        "capabilities": "\n".join(role.capabilities),
        "constraints": "\n".join(role.constraints),
        "prompt_key": role.prompt_key,
        "context_strategy": role.context_strategy,
        "preferred_model": role.preferred_model,
        "fallback_model": role.fallback_model,
        "queue": role.queue,
        "max_llm_calls": role.max_llm_calls,
        "max_tokens": role.max_tokens,
        "timeout_seconds": role.timeout_seconds,
        "max_sub_agents": role.max_sub_agents,
        "max_delegation_depth": role.max_delegation_depth,
        **({"answer_sets_plan": "on"} if role.answer_sets_plan else {}),
        "examples": json.dumps(role.examples or []),
        "versions-TOTAL_FORMS": "0",
        "versions-INITIAL_FORMS": "0",
        "versions-MIN_NUM_FORMS": "0",
        "versions-MAX_NUM_FORMS": "1000",
    }
