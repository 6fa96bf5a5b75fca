"""The one view is the only way a process is started (issue 35): a process acode starts for
a role gets its mounts, hidden files, git and environment from ``process_view``, and the
code cannot start one any other way without this test saying so."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sessions_app.containment.bwrap import SandboxView, bwrap_options
from sessions_app.containment.process import Limits
from sessions_app.containment.sandbox import SandboxStatus
from sessions_app.containment.view import process_view

ROOT = Path(__file__).resolve().parents[3]
PRODUCTION = ("acode", "audit", "roles", "sessions_app")
SPAWNERS = {
    ("subprocess", "run"), ("subprocess", "Popen"), ("subprocess", "call"),
    ("subprocess", "check_call"), ("subprocess", "check_output"), ("os", "system"),
    ("os", "popen"), ("os", "fork"), ("os", "forkpty"), ("os", "posix_spawn"),
    ("os", "posix_spawnp"), ("anyio", "open_process"), ("anyio", "run_process"),
    ("asyncio", "create_subprocess_exec"), ("asyncio", "create_subprocess_shell"),
    ("pty", "spawn"),
}  # fmt: skip
# Where a process may be started, and why that is not a door for a role.
ALLOWED = {
    "sessions_app/containment/process.py": "the one runner: the sandbox and the server's git use it",
    "sessions_app/containment/mcpserver.py": "starts bwrap with the options of process_view's view",
    "sessions_app/containment/sandbox.py": "asks bwrap --help (no workspace, no role)",
    "acode/devserver.py": "make run: the server's own processes",
    "acode/demo.py": "make demo: the server's own processes, as make run's",
    "acode/modelserver.py": "the embedded model server",
    "acode/embedded.py": "the embedded Redis",
    # The CLI on a developer's machine (issue 43), never the server: no workspace of acode's.
    "acode/cli/codex_trust.py": "acode agents connect codex asks the user's own Codex for hashes",
    "acode/cli/hookshim.py": "the Codex hook shim reads the user's own git remote",
}
# Who may call the one runner, and why.
RUNNER_CALLERS = {
    "sessions_app/containment/sandbox.py": "runs bwrap with process_view's view",
    "sessions_app/containment/safegit.py": "the server's own git, on server state",
}


def _calls(tree: ast.AST) -> list[tuple[str, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name):
                found.append((owner.id, node.func.attr))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            found.append(("", node.func.id))
    return found


def _modules() -> list[tuple[str, ast.AST]]:
    out: list[tuple[str, ast.AST]] = []
    for package in PRODUCTION:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            out.append((str(path.relative_to(ROOT)), ast.parse(path.read_text())))
    return out


def test_processes_are_started_only_where_the_one_view_is_used() -> None:
    starters = {name for name, tree in _modules() if any(call in SPAWNERS for call in _calls(tree))}
    assert starters <= set(ALLOWED), (
        f"a process started outside the one view: {starters - set(ALLOWED)}"
    )


def test_the_one_runner_is_called_only_by_the_sandbox_and_the_servers_git() -> None:
    callers = {
        name
        for name, tree in _modules()
        if ("", "run_process") in _calls(tree) or ("process", "run_process") in _calls(tree)
    }
    assert callers - {"sessions_app/containment/process.py"} <= set(RUNNER_CALLERS), callers


def test_bwrap_options_refuse_a_view_the_one_view_did_not_make(tmp_path: Path) -> None:
    status = SandboxStatus(True, "/usr/bin/bwrap", "ok")
    with pytest.raises(ValueError, match="process_view"):
        bwrap_options(status, str(tmp_path), False, False, Limits(), (), SandboxView())
    made = process_view(None, workspace=tmp_path)
    assert "--clearenv" in bwrap_options(status, str(tmp_path), False, False, Limits(), (), made)
