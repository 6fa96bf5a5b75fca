"""Replay records every fact a decision could read: a decision of each kind (allowed,
denied by tool, by schema, by path, by command rule, by sandbox) recorded under one
version of a role replays under another that decides it differently, never "not
replayable" for want of a fact (pure: the recorders over known facts)."""

from __future__ import annotations

from typing import Any

import pytest

from roles.access import ToolSpec, compute_access
from roles.commands.workspace import KnownWorkspace
from roles.decision import HostFacts, RoleView, decide
from roles.decision.recording import (
    RecordingHost,
    RecordingWorkspace,
    possible_paths,
    replay_record,
)
from roles.decision.replay import recorded_decision, replay_decision
from roles.tools import declared_tools
from roles.validation import role_spec

TOOLS = [ToolSpec(t, t.description, True) for t in declared_tools().values()]
PYTEST = {"program": "pytest", "options": {"-q": None, "--junitxml": "path"}, "args": "paths"}
WIDE = {"program": "pytest", "options": {"-q": None, "-x": None, "--junitxml": "path"},
        "args": "paths"}  # fmt: skip
LINKS = KnownWorkspace.of(["tests/linked"])


def _role(
    permissions: list[str], rules: list[Any], write_paths: list[str] | None = None
) -> RoleView:
    spec = role_spec({"slug": "r", "name": "R", "permissions": permissions,
                      "command_patterns": rules, "write_paths": write_paths or []})  # fmt: skip
    return RoleView(spec, compute_access("r", {"r": spec}, TOOLS))


READER = _role(["read_files"], [])
RUNNER = _role(["read_files", "execute_commands"], [PYTEST])
WIDER = _role(["read_files", "execute_commands", "write_files", "create_files"], [WIDE], ["src/**"])
NO_SANDBOX = HostFacts(sandbox_available=False, sandbox_reason="no bubblewrap")


def _recorded(role: RoleView, tool: str, arguments: Any, host: HostFacts) -> Any:
    """Decide live (through the recorders) and read the audit row back, as the executor
    and the replay selector do."""
    rec_host, rec_ws = RecordingHost(host), RecordingWorkspace(LINKS)
    decision = decide(role, tool, arguments, host=rec_host, workspace=rec_ws)
    entry = replay_record(arguments, rec_host, rec_ws, redact=lambda t: t, tool=tool)
    details = {"tool": tool, "rule": decision.rule, "code": decision.code, "replay": entry}
    event = "ToolDecision" if decision.allowed else "ToolDenied"
    return decision, recorded_decision(audit_id=1, at=None, event_type=event,
                                       result=decision.code or "allowed", details=details)  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "role", "tool", "arguments", "host", "rule"),
    [
        ("allowed", RUNNER, "execute_command", {"argv": ["pytest", "-q", "tests/a.py"]},
         HostFacts(), "command_rules[0]"),
        ("denied by tool", READER, "execute_command", {"argv": ["pytest", "-x", "tests/linked/a.py"]},
         HostFacts(), "effective_tools"),
        ("denied by schema", RUNNER, "execute_command", {"argv": "pytest -x"}, HostFacts(), "schema"),
        ("denied by path", WIDER, "write_file", {"path": "src/../x", "content": "y"}, HostFacts(),
         "path"),
        ("denied by command rule", RUNNER, "execute_command",
         {"argv": ["pytest", "-x", "--junitxml=tests/linked/out.xml", "tests/b.py"]}, HostFacts(),
         "command_rules[0]"),
        ("denied by sandbox", RUNNER, "run_tests", {"argv": ["pytest", "-q", "tests/c.py::t"]},
         NO_SANDBOX, "sandbox"),
    ],
)  # fmt: skip
def test_a_decision_of_every_kind_replays_under_another_version(
    kind: str, role: RoleView, tool: str, arguments: Any, host: HostFacts, rule: str
) -> None:
    live, recorded = _recorded(role, tool, arguments, host)
    assert live.rule.startswith(rule), (kind, live.rule, live.reason)
    for draft in (role, WIDER, READER, RUNNER):
        replayed = replay_decision(draft, recorded)
        assert replayed.decision is not None, (kind, draft.spec.permissions, replayed.reason)
        again = decide(draft, tool, arguments, host=host, workspace=LINKS)
        assert (replayed.decision.allowed, replayed.decision.rule) == (again.allowed, again.rule)
    same = replay_decision(role, recorded)
    assert same.change == "unchanged" and same.decision is not None
    assert same.decision.rule == live.rule


def test_a_denied_command_keeps_the_sandbox_facts_and_the_links_it_never_read() -> None:
    live, recorded = _recorded(RUNNER, "execute_command", {"argv": ["pytest", "-x", "t.py"]},
                               NO_SANDBOX)  # fmt: skip
    assert not live.allowed and live.rule.startswith("command_rules[0]")  # no sandbox read
    assert recorded.host is not None and recorded.host["sandbox_available"] is False
    replayed = replay_decision(WIDER, recorded)
    assert replayed.decision is not None and replayed.decision.rule == "sandbox"

    argv = ["pytest", "-x", "--junitxml=tests/linked/out.xml"]
    live, recorded = _recorded(RUNNER, "execute_command", {"argv": argv}, HostFacts())
    assert not live.allowed and "-x" in live.reason  # refused before the path was looked at
    links = {tuple(parts): answer for parts, answer in recorded.links}
    assert links[("tests", "linked", "out.xml")] == "tests/linked"
    replayed = replay_decision(WIDER, recorded)
    assert replayed.decision is not None and "symbolic link" in replayed.decision.reason


def test_possible_paths_reads_what_command_rules_read_out_of_argv() -> None:
    found = possible_paths({"argv": ["pytest", "--junitxml=r/o.xml", "-kx/y", "t/a.py::t", "/abs",
                                     "../up", ".git/x", "ok"]})  # fmt: skip
    assert ["r", "o.xml"] in found and ["x", "y"] in found and ["t", "a.py"] in found
    assert ["ok"] in found
    assert not any(p[0] in ("abs", "..", ".git") for p in found)
