"""What a tool implementation works with: the job's context (the workspace, the writer,
the role's powers) and what it returns to the model and the audit log."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roles.writes import WritePolicy
from sessions_app.containment import (
    ApplyJournal,
    LayerLimits,
    RecordedWrite,
    WorkspaceSight,
    WorkspaceWriter,
    WriteTarget,
    workspace_sight,
)


@dataclass
class ReviewState:
    """Which pending changes the model was shown: ``shown`` the digest of those it last saw
    whole (its context, or ``analyze_diff``), ``current`` that of ``pending_diffs`` now.
    ``submit_review`` approves ``shown`` and nothing else."""

    shown: str = ""
    current: str = ""


@dataclass
class ToolContext:
    """What an implementation may touch: the workspace and the session's pending changes.

    ``writer`` is the only way a tool changes the workspace; ``record_change`` records what
    it wrote as a pending change; ``journal`` records a command's changes as one unit.
    ``git_dir`` (the session's git directory in server state), ``layers_root`` (where
    command layers are made), ``session_layer`` (what the session keeps that the repository
    ignores), ``layer_limits`` and ``tracked`` (the repository's tracked paths) are the
    session's. ``may_write`` (a command's workspace is writable), ``network``,
    ``read_secrets`` and ``write_policy`` (what a command's changes are applied by) are the
    role's, set by the executor for every call from the role as it is.
    """

    workspace: Path
    writer: WorkspaceWriter
    layers_root: Path
    pending_diffs: dict[str, str]
    record_change: Callable[[RecordedWrite], None]
    approve_changes: Callable[[str, str], int]  # (summary, the digest the model was shown)
    request_changes: Callable[[str, list[Any]], None]
    # None: no run, nobody to ask; the call returns a remembered answer, or None (asked).
    ask_human: Callable[[str], str | None] | None = None
    # Delegation (issue 41): start a sub-agent (role, task, llm_calls) -> its job id; wait
    # for sub-agents (job ids or None: every one not collected, timeout) -> their results.
    delegate: Callable[[str, str, int | None], str] | None = None
    collect: Callable[[list[str] | None, float], list[dict[str, Any]]] | None = None
    # The Product Manager (issue 40): propose a backlog document to the project the session
    # plans -> the (key, status) of each task it added.
    propose_backlog: Callable[[dict[str, Any]], list[tuple[str, str]]] | None = None
    git_dir: Path | None = None
    command_timeout: float = 120.0
    may_write: bool = False
    network: bool = False
    read_secrets: bool = False
    write_policy: WritePolicy = field(default_factory=WritePolicy)
    mcp: Any = None  # the job's MCP servers (agent.mcp.servers.JobMcpServers), closed with it
    journal: ApplyJournal | None = None
    session_layer: Path | None = None
    layer_limits: LayerLimits = field(default_factory=lambda: LayerLimits(1 << 30, 200_000))
    tracked: Callable[[], list[str]] = list
    review: ReviewState = field(default_factory=ReviewState)  # shared by the call copies

    def write_target(self, *, masked: bool | None = None) -> WriteTarget:
        """Where a command's (or MCP server's) writes land, by the role's rule; ``masked``:
        the process saw hidden files only as stand-ins (by default: the role does not read
        secrets)."""
        assert self.journal is not None, "a write-capable context records through a journal"
        masked = not self.read_secrets if masked is None else masked
        hidden = self.writer.secrets.hidden_among if masked else None
        return WriteTarget(self.writer, self.write_policy, self.journal, self.layer_limits,
                           self.session_layer, self.tracked, hidden)  # fmt: skip

    def sight(self) -> WorkspaceSight:
        """What the role's processes may see of the workspace (the one view's input)."""
        return workspace_sight(
            self.workspace, self.writer.secrets, git_dir=self.git_dir,
            read_secrets=self.read_secrets,
        )  # fmt: skip


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns to the model (already redacted) and records in the audit log.

    ``write_denials`` lists what a command changed that the role may not change (discarded
    with its layer, never applied): the executor audits them as a refusal.
    """

    output: str
    target: str
    summary: str
    details: dict[str, Any] = field(default_factory=dict)
    write_denials: list[dict[str, str]] = field(default_factory=list)
    untrusted: bool = True  # the output holds outside text (False: acode's own words)
