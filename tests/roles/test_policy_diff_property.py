"""Property: for random pairs of role versions, every call (and every change a command's
layer may leave) that the new version allows and the old denies is reported by the diff as
a gain; and the other way round as a narrowing. No false "narrows"."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from roles.access import RoleSpec
from roles.commands.workspace import KnownWorkspace
from roles.decision import HostFacts, RoleView, decide
from roles.writes import CHANGE_PERMISSIONS
from tests.roles.test_policy_diff import ALL, PYTEST, TRACKER, diff, spec, view

GLOBS = ["src/**", "docs/*.md", "**/*.py", "tests/*", "README.md", "*.md", "src/*/x.py"]
RULES: list[Any] = [
    PYTEST,
    {**PYTEST, "options": {**PYTEST["options"], "-x": None}},
    {**PYTEST, "outcome": "ask"},
    {"program": "make", "subcommands": ["test", "lint"]},
    {"program": "ls", "args": "paths"},
    {"program": "git", "subcommands": ["status"], "options": {"-s": None}},
    "make *",
    "pytest *",
    "git status",
    "python -m pytest -q *",
    {"program": "ls", "args": ["secret.txt"], "outcome": "ask"},
    "ls s*",
]
LIMITS = [
    {"properties": {"project": {"enum": ["acode"]}}},
    {"properties": {"project": {"enum": ["acode", "docs"]}}},
    {"properties": {"project": {"maxLength": 4}}},
]
PATHS = ["src/a.py", "docs/x.md", "README.md", "tests/t.py", "a/b/c.py", "src/m/x.py", "x.md"]
ARGVS = [
    ["python", "-m", "pytest", "-q"], ["python", "-m", "pytest", "-x", "tests"], ["make", "test"],
    ["make", "x"], ["ls", "src"], ["pytest", "-q"], ["git", "status", "-s"], ["curl", "x"],
    ["python", "-m", "pytest", "-q", "-k", "slow"], ["ls", "secret.txt"],
]  # fmt: skip
CALLS: list[tuple[str, dict[str, Any]]] = [
    *[(tool, {"path": p, "content": "x"}) for tool in ("write_file", "create_file") for p in PATHS],
    *[(tool, {"path": p}) for tool in ("delete_file", "read_file") for p in PATHS],
    *[("execute_command", {"argv": argv}) for argv in ARGVS],
    *[(TRACKER.name, {"project": p}) for p in ("acode", "docs", "other", "acode-long")],
]
PERMISSIONS = [*ALL, "mcp-tracker"]
# An allow-list: none (every tool the permissions unlock), or groups and tools (issue: tool
# groups), so a group's members gained or lost are found like any tool.
GROUPS = st.lists(st.sampled_from(["file_tools", "write_tools", "command_tools", "mcp_tools"]),
                  unique=True, max_size=2)  # fmt: skip
NAMED = st.lists(st.sampled_from(["read_file", "write_file", "execute_command"]), unique=True,
                 max_size=1)  # fmt: skip


@st.composite
def versions(draw: st.DrawFn) -> tuple[list[RoleSpec], dict[str, Any]]:
    """A role (``coder``), maybe a parent (``base``), and maybe a limit on the MCP tool."""
    parent = draw(st.booleans())
    fields = {
        "permissions": tuple(draw(st.lists(st.sampled_from(PERMISSIONS), unique=True))),
        "write_paths": tuple(draw(st.lists(st.sampled_from(GLOBS), unique=True, max_size=3))),
        "command_patterns": tuple(draw(st.lists(st.sampled_from(RULES), max_size=3))),
        "parent": "base" if parent else None,
        "allowed_tool_groups": tuple(draw(GROUPS)),
        "allowed_tools": tuple(draw(NAMED)),
    }
    specs = [spec(**fields)]
    if parent:
        held = draw(st.lists(st.sampled_from(PERMISSIONS), unique=True))
        specs.append(spec("base", held, write_paths=(), command_patterns=(),
                          allowed_tool_groups=tuple(draw(GROUPS))))  # fmt: skip
    limit = draw(st.sampled_from([None, *LIMITS]))
    limits = {"coder": {TRACKER.name: limit}} if limit is not None else {}
    return specs, limits


@st.composite
def pairs(draw: st.DrawFn) -> tuple[RoleView, RoleView]:
    """Two versions: independent, or the second a few fields away from the first."""
    old_specs, old_limits = draw(versions())
    new_specs, new_limits = draw(versions())
    if draw(st.booleans()):  # a small change: one field (or the parent, or the limit) moved
        which = draw(st.sampled_from(["permissions", "write_paths", "command_patterns", "parent",
                                      "limit", "allowed_tool_groups"]))  # fmt: skip
        role = old_specs[0]
        if which == "limit":
            new_specs = old_specs
        elif which == "parent":  # the drawn parent (and its spec) under the old role
            new_specs = [_with(role, parent=new_specs[0].parent), *new_specs[1:]]
            new_limits = old_limits
        else:
            new_specs = [_with(role, **{which: getattr(new_specs[0], which)}), *old_specs[1:]]
            new_limits = old_limits
    return view(old_specs, "coder", old_limits), view(new_specs, "coder", new_limits)


def _with(role: RoleSpec, **fields: Any) -> RoleSpec:
    return replace(role, **fields)


def _allowed(role: RoleView, tool: str, arguments: dict[str, Any]) -> bool:
    decision = decide(role, tool, arguments, host=HostFacts(), workspace=KnownWorkspace())
    return decision.allowed


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(pairs())
def test_every_call_the_new_version_alone_allows_is_a_reported_gain(
    pair: tuple[RoleView, RoleView],
) -> None:
    old, new = pair
    result = diff(old, new)
    for tool, arguments in CALLS:
        before, after = _allowed(old, tool, arguments), _allowed(new, tool, arguments)
        if after and not before:
            event(f"gained call {tool}")
            assert result.widens, (tool, arguments, result.as_data())
        if before and not after:
            assert result.narrowings, (tool, arguments, result.as_data())
    for path in PATHS:  # what a command's layer may leave
        for change in CHANGE_PERMISSIONS:
            before = old.write_policy.check(path, change=change).allowed
            after = new.write_policy.check(path, change=change).allowed
            if after and not before:
                assert result.widens, (path, change, result.as_data())
            if before and not after:
                assert result.narrowings, (path, change, result.as_data())
