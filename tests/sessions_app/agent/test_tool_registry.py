"""One tool registry: every declared tool runs, nothing else does; one decision from the role
definition; arguments normalised once; one write-path rule for file tools and commands."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from roles.models import Tool
from roles.registry import RoleDef, registry
from roles.services import role_write, tool_save
from roles.tools import declared_tools
from sessions_app.agent import tools as agent_tools
from sessions_app.agent.executor import tool_check, tool_execute
from sessions_app.agent.loop import tool_definitions
from sessions_app.agent.tool_context import tool_context
from sessions_app.agent.tools import TOOL_IMPLEMENTATIONS, ToolImpl, ToolResult
from sessions_app.containment import ContentStore, SecretIndex, WorkspaceWriter
from sessions_app.containment.applying import layer_apply
from sessions_app.containment.layerscan import LayerChange, LayerScan
from sessions_app.services.jobs import job_create
from tests.factories import make_role
from tests.sessions_app.containment.layerkit import RecordingJournal
from tests.sessions_app.jobkit import session_in

pytestmark = pytest.mark.django_db


def test_every_declared_tool_is_implemented_and_every_implementation_declared() -> None:
    assert set(TOOL_IMPLEMENTATIONS) == set(declared_tools())
    with pytest.raises(RuntimeError, match="declared without an implementation: \\['ask_human'\\]"):
        agent_tools._bind(*(i for n, i in TOOL_IMPLEMENTATIONS.items() if n != "ask_human"))
    stray = ToolImpl("deploy_it", TOOL_IMPLEMENTATIONS["read_file"].run)
    with pytest.raises(RuntimeError, match="without a declaration: \\['deploy_it'\\]"):
        agent_tools._bind(*TOOL_IMPLEMENTATIONS.values(), stray)


def test_a_call_is_decided_from_the_role_definition_alone(
    tmp_path: Path, django_assert_num_queries: Any
) -> None:
    registry.sync()
    planner, coder = registry.get("planner"), registry.get("coder")
    call = ("write_file", {"path": "a.py", "content": "x"}, tmp_path)
    with django_assert_num_queries(0):
        refused = tool_check(planner, *call)
        allowed = tool_check(coder, *call)
    assert (refused.allowed, refused.rule, allowed.allowed) == (False, "effective_tools", True)
    # A definition recorded with Coder's access decides as Coder did, whatever the registry holds.
    replayed: RoleDef = dataclasses.replace(planner, access=coder.access)
    assert tool_check(replayed, *call).allowed


def _caller(user: Any, workspace: Path, role: str = "coder") -> Any:
    session = session_in(role, user, workspace=workspace)
    job = job_create(session=session, request="t", user=user)
    context = tool_context(job, session, [])

    def call(tool: str, **arguments: Any) -> Any:
        registry.sync()
        return tool_execute(
            session=session, role=registry.get(session.current_role.slug), tool=tool,
            arguments=arguments, actor="job:test", context=context, job=job,
        )  # fmt: skip

    return call


def test_implementations_get_the_arguments_as_checked(
    user: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "README.md").write_text("# hi\n")
    got: list[dict[str, Any]] = []

    def record(ctx: Any, args: dict[str, Any]) -> ToolResult:
        got.append(args)
        return ToolResult("ok", "t", "recorded")

    for name in ("read_file", "run_tests", "list_directory"):
        monkeypatch.setitem(TOOL_IMPLEMENTATIONS, name, ToolImpl(name, record))
    call = _caller(user, tmp_path)
    assert call("read_file", path="./docs/./../README.md").status == "denied"  # '..' refused
    assert call("read_file", path="./README.md").status == "ok"
    assert call("run_tests").status == "ok"
    assert call("list_directory", path="docs/").status == "ok"
    assert got == [
        {"path": "README.md"},
        {"argv": ["python", "-m", "pytest", "-q"]},
        {"path": "docs"},
    ]


def test_a_disabled_tool_is_neither_offered_nor_run(user: Any, tmp_path: Path) -> None:
    row = Tool.objects.get(name="read_file")
    row.enabled = False
    tool_save(tool=row, actor="test")
    registry.sync()
    offered = {t["function"]["name"] for t in tool_definitions(registry.get("planner"))}
    assert offered == {
        "find_references", "grep_search", "list_directory", "search_code", "semantic_search"
    }  # fmt: skip
    outcome = _caller(user, tmp_path, "planner")("read_file", path="README.md")
    assert outcome.status == "denied" and "tool is disabled" in outcome.reason


# -- one write-path rule -------------------------------------------------------------------
TOOL_FOR = {"modified": "write_file", "created": "create_file", "deleted": "delete_file"}
PATHS = ["docs/a.md", "README.md", "src/app.py", ".git/config", "docs/b\x1b.md"]


def _layer_answer(role: RoleDef, root: Path, path: str, change: str) -> tuple[bool, str]:
    """What the server does with ``change`` at ``path`` left in a command's layer."""
    ws, source = root / "ws", root / "layer"
    for top in (ws, source):
        (top / Path(path).parent).mkdir(parents=True, exist_ok=True)
    (source / path).write_text("new\n")
    if change != "created":
        (ws / path).write_text("old\n")
    writer = WorkspaceWriter(ws, ContentStore(None), SecretIndex(ws, root / "index", live=True))
    found = [LayerChange(path, change, "file", 0o644, 4, path)]
    writes = layer_apply(writer, LayerScan(changes=found), source_root=source,
                         policy=role.write_policy, journal=RecordingJournal())  # fmt: skip
    if writes.allowed:
        return True, ""
    return False, writes.denied[0]["rule"]


@pytest.mark.parametrize("permissions", ["all", "write_files only"])
def test_file_tools_and_command_layers_give_one_answer_per_path(
    tmp_path: Path, permissions: str
) -> None:
    if permissions == "all":
        role_write(data={"write_paths": ["docs/**", "README.md"]}, create=False, slug="coder",
                   actor="test")  # fmt: skip
        role = "coder"
    else:
        make_role("editor", permissions=["read_files", "write_files", "execute_commands"],
                  write_paths=["docs/**", "README.md"])  # fmt: skip
        role = "editor"
    registry.sync()
    definition = registry.get(role)
    for index, (path, change) in enumerate((p, c) for p in PATHS for c in TOOL_FOR):
        arguments = {"path": path} if change == "deleted" else {"path": path, "content": "new\n"}
        by_tool = tool_check(definition, TOOL_FOR[change], arguments, tmp_path)
        allowed, rule = _layer_answer(definition, tmp_path / str(index), path, change)
        assert by_tool.allowed == allowed, (path, change, by_tool.rule, rule)
        if by_tool.rule in ("write_permission", "write_paths", "file_name"):
            assert by_tool.rule == rule, (path, change)
