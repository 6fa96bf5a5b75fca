"""Replay never guesses: what a recorded decision did not consult, or an MCP tool whose
approved definition changed, is reported as not replayable (pure: no database)."""

from __future__ import annotations

import pytest

from roles.access import ToolSpec, compute_access
from roles.decision import RoleView
from roles.decision.recording import NotRecorded, RecordedHost, RecordedWorkspace
from roles.decision.replay import MCP_CHANGED, RecordedDecision, replay_decision
from roles.tools import ToolDeclaration
from roles.validation import role_spec

ECHO = ToolDeclaration("mcp__srv__echo", "echo", {"type": "object"}, frozenset({"mcp-srv"}),
                       kind="mcp", pinned_hash="new")  # fmt: skip


def _role() -> RoleView:
    spec = role_spec({"slug": "r", "name": "R", "permissions": ["mcp-srv"]})
    return RoleView(spec, compute_access("r", {"r": spec}, [ToolSpec(ECHO, "echo", True)]))


def _recorded(definition_hash: str) -> RecordedDecision:
    return RecordedDecision(audit_id=1, at=None, tool=ECHO.name, allowed=True, code="",
                            rule="permission: mcp-srv", arguments={},
                            definition_hash=definition_hash)  # fmt: skip


def test_an_mcp_tool_whose_definition_changed_is_not_replayed() -> None:
    assert replay_decision(_role(), _recorded("old")).reason == MCP_CHANGED
    same = replay_decision(_role(), _recorded("new"))
    assert same.decision is not None and same.change == "unchanged"


def test_recorded_links_answer_the_queries_they_imply_and_nothing_else() -> None:
    ws = RecordedWorkspace.of([[["src", "link", "t.py"], "src/link"], [["tests", "a"], None]])
    assert ws.link_on_path(["src", "link", "t.py"]) == "src/link"
    assert ws.link_on_path(["src", "link", "other.py"]) == "src/link"  # same first link
    assert ws.link_on_path(["src"]) is None  # a prefix before the link
    assert ws.link_on_path(["tests"]) is None
    with pytest.raises(NotRecorded, match="'tests/a/b'"):
        ws.link_on_path(["tests", "a", "b"])  # past what was looked at
    with pytest.raises(NotRecorded, match="'docs'"):
        ws.link_on_path(["docs"])


def test_host_facts_not_recorded_are_not_guessed() -> None:
    with pytest.raises(NotRecorded, match="the host's sandbox"):
        RecordedHost(None)()
    with pytest.raises(NotRecorded, match="sandbox available"):
        RecordedHost({"sandbox_required": True})()
