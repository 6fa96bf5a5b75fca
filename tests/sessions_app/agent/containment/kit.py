"""Shared pieces of the adversarial containment suite (see its test modules)."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from roles.registry import registry
from roles.services import role_write
from sessions_app.agent.executor import ToolOutcome, tool_execute
from sessions_app.agent.tool_context import tool_context
from sessions_app.containment.sandbox import sandbox_available
from sessions_app.models import AgentSession, AuditEvent
from sessions_app.services.jobs import job_create
from tests.sessions_app.jobkit import session_in

STATUS = sandbox_available()
needs_sandbox = pytest.mark.skipif(
    not STATUS.available, reason=f"bubblewrap sandbox unavailable here: {STATUS.reason}"
)
SECRET = f"acode-secret-{uuid.uuid4().hex}"


def fingerprint(root: Path) -> dict[str, tuple[str, bytes, int]]:
    """Everything under ``root``: kind, content (or link text) and mode of every entry."""
    out: dict[str, tuple[str, bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            info = path.lstat()
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path).encode(), info.st_mode)
            elif path.is_dir():
                out[rel] = ("dir", b"", info.st_mode)
            else:
                out[rel] = ("file", path.read_bytes(), info.st_mode)
    return out


@dataclass
class Area:
    """A workspace, a sentinel directory next to it, and how the sentinel looked."""

    ws: Path
    sentinel: Path
    original: dict[str, tuple[str, bytes, int]]

    def assert_sentinel_unchanged(self) -> None:
        assert fingerprint(self.sentinel) == self.original, "something outside changed"


def src_tree(ws: Path) -> dict[str, tuple[str, bytes, int]]:
    return fingerprint(ws / "src")


def audit_text(rows: list[AuditEvent]) -> str:
    return json.dumps([[r.target, r.result, r.details] for r in rows], ensure_ascii=False)


class Caller:
    """Tool calls made the way the agent loop makes them, with the audit rows they wrote."""

    def __init__(self, session: AgentSession, user: Any, area: Area) -> None:
        self.session, self.area = session, area
        self.job = job_create(session=session, request="attack", user=user)
        self.context = tool_context(self.job, session, [])
        self.rows: list[AuditEvent] = []

    def __call__(self, tool: str, **arguments: Any) -> ToolOutcome:
        last = self._last_seq()
        registry.sync()
        outcome = tool_execute(
            session=self.session,
            role=registry.get(self.session.current_role.slug),
            tool=tool,
            arguments=arguments,
            actor="job:test",
            context=self.context,
            job=self.job,
        )
        self.rows = list(
            AuditEvent.objects.filter(chain=f"session:{self.session.pk}", seq__gt=last).order_by(
                "seq"
            )
        )
        self._assert_audited(outcome)
        assert SECRET not in outcome.for_model()
        assert SECRET not in audit_text(self.rows)
        outcome.for_model().encode("utf-8")  # no lone surrogate reaches the model
        self.area.assert_sentinel_unchanged()
        return outcome

    def _last_seq(self) -> int:
        row = AuditEvent.objects.filter(chain=f"session:{self.session.pk}").order_by("-seq").first()
        return row.seq if row else 0

    def _assert_audited(self, outcome: ToolOutcome) -> None:
        calls = [r for r in self.rows if r.event_type != "ChangeRecorded"]
        assert calls, "a call without audit rows"
        for row in calls:
            assert row.details["role_hash"] and "role_version" in row.details
        if len(calls) == 1:
            (row,) = calls
            assert row.event_type == "ToolDenied" and row.details["phase"] == "decision"
            assert row.details["rule"] and outcome.status == "denied"
            assert row.result == outcome.code
            return
        first, *middle, last = calls
        assert first.event_type == "ToolDecision" and first.result == "allowed"
        assert first.details["phase"] == "decision" and first.details["rule"]
        assert last.details["phase"] == "outcome" and last.details["decision"] == first.pk
        assert last.event_type == ("RoleAction" if outcome.status != "denied" else "ToolDenied")
        for row in middle:
            assert (row.event_type, row.details["phase"]) == ("ToolDenied", "command_writes")

    def denied_writes(self) -> set[tuple[str, str, str]]:
        rows = [r for r in self.rows if r.details.get("phase") == "command_writes"]
        return {(d["path"], d["change"], d["rule"]) for r in rows for d in r.details["discarded"]}

    def outcome_row(self) -> AuditEvent:
        return next(r for r in reversed(self.rows) if r.details.get("phase") == "outcome")


def coder(user: Any, area: Area, **data: Any) -> Caller:
    role_write(
        data={"write_paths": ["docs/**"], "command_patterns": [], **data},
        create=False,
        slug="coder",
        actor="test",
    )
    return Caller(session_in("coder", user, workspace=area.ws), user, area)


def as_tester(user: Any, area: Area, *, loose: bool = True) -> Caller:
    """The Tester; ``loose`` swaps its structured rules for permissive globs, so the attacks
    reach the sandbox (the layer under test) instead of being refused by the rules."""
    if loose:
        globs = ["pytest", "pytest *", "python -m pytest", "python -m pytest *", "make test"]
        role_write(data={"command_patterns": globs}, create=False, slug="tester", actor="test")
    return Caller(session_in("tester", user, workspace=area.ws), user, area)


def no_processes_left(marker: str) -> bool:
    found = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True, check=False)
    return not [line for line in found.stdout.splitlines() if "pgrep" not in line]
