"""Through the executor: calls a narrow role refused (by its command rules, before any
sandbox fact or link was read) replay under a wider draft, none "not replayable" (before
issue 37, 4 of these 10 were: sandbox facts and links never read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from roles.decision.replay import replay_decision
from roles.registry import registry
from roles.services import role_write
from roles.services.replay import role_draft
from sessions_app.agent.executor import tool_execute
from sessions_app.agent.tool_context import tool_context
from sessions_app.agent.tools import TOOL_IMPLEMENTATIONS, ToolImpl, ToolResult
from sessions_app.selectors.decisions import recorded_decisions
from sessions_app.services.jobs import job_create
from tests.sessions_app.jobkit import session_in

pytestmark = pytest.mark.django_db

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "src/app.py"}),
    ("list_directory", {"path": "."}),
    ("write_file", {"path": "src/app.py", "content": "x = 2\n"}),
    ("read_file", {"path": "../etc/passwd"}),
    ("execute_command", {"argv": ["python", "-m", "pytest", "-q", "tests"]}),
    ("execute_command", {"argv": ["python", "-m", "pytest", "-x", "outside/t.py"]}),
    ("execute_command", {"argv": ["rm", "-rf", "src"]}),
    ("execute_command", {"argv": ["pytest", "-x", "--junitxml=src/link/r.xml"]}),
    ("run_tests", {"argv": ["make", "check"]}),
    ("grep_search", {"pattern": "x", "path": "src"}),
]
NARROW: dict[str, Any] = {
    "command_patterns": [
        {"program": "pytest", "options": {"-q": None}, "args": "paths"},
        {"program": "python", "module": "pytest", "options": {"-q": None}, "args": "paths"},
    ],
    "examples": [],
}
WIDE: dict[str, Any] = {"command_patterns": [], "examples": []}


def test_calls_a_narrow_role_refused_replay_under_a_wide_draft(user: Any, tmp_path: Path,
                                                                monkeypatch: Any) -> None:  # fmt: skip
    ws = tmp_path / "ws"
    for name in ("src", "docs", "tests"):
        (ws / name).mkdir(parents=True)
    (ws / "src" / "app.py").write_text("x = 1\n")
    (ws / "src" / "link").symlink_to("../docs")
    (ws / "outside").symlink_to(tmp_path)
    for name in ("execute_command", "run_tests"):
        monkeypatch.setitem(TOOL_IMPLEMENTATIONS, name,
                            ToolImpl(name, lambda ctx, args: ToolResult("ok", "", "not run")))  # fmt: skip
    role_write(data=NARROW, create=False, slug="coder", actor="test")
    session = session_in("coder", user, workspace=ws)
    job = job_create(session=session, request="t", user=user)
    context = tool_context(job, session, [])
    registry.sync()
    for tool, arguments in CALLS:
        tool_execute(session=session, role=registry.get("coder"), tool=tool,
                     arguments=arguments, actor="job:test", context=context, job=job)  # fmt: skip
    recorded = list(recorded_decisions(role="coder"))[-len(CALLS) :]
    assert sum(not r.allowed for r in recorded) >= 5
    wide = role_draft(slug="coder", data=WIDE).role
    replayed = [replay_decision(wide, r) for r in recorded]
    assert [r.reason for r in replayed if r.decision is None] == []
    assert sum(r.change == "denied->allowed" for r in replayed) >= 3
