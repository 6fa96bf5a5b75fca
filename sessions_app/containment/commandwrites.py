"""What becomes of a command's writes once it is over: the one path from a command's layer
to the workspace and the session layer, for commands and MCP servers alike.

``command_writes`` reads the layer (``layerscan``: bounded, any depth, only the kernel's
word on deletions), applies what the role may write as one unit (``applying``), moves what
the repository ignores into the session's layer (``sessionlayer``), and leaves removing the
layer to its caller. A layer over its budget applies nothing (``refusal``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from roles.writes import WritePolicy
from sessions_app.containment.applying import ApplyJournal, layer_apply
from sessions_app.containment.layer import Layer
from sessions_app.containment.layerscan import (
    LayerLimits,
    LayerOverBudget,
    LayerScan,
    copy_changes,
    layer_changes,
)
from sessions_app.containment.sessionlayer import IgnoreRules, session_keep, session_layer_index
from sessions_app.containment.writes import CommandWrites, WorkspaceWriter

OVER_BUDGET = "ACODE-TOL-005"


@dataclass(frozen=True)
class WriteTarget:
    """Where and by which rules a command's writes land: the workspace's writer, the
    role's write rule, the journal that records them, the layer's limits, the session's
    layer (None: nothing is kept) and the repository's tracked paths (for ignore rules)."""

    writer: WorkspaceWriter
    policy: WritePolicy
    journal: ApplyJournal
    limits: LayerLimits
    session_layer: Path | None = None
    tracked: Callable[[], list[str]] = field(default=list)
    # Which of some paths the process saw only as stand-ins (None: it saw every file as is).
    hidden: Callable[[list[str]], set[str]] | None = None


def command_writes(layer: Layer, target: WriteTarget, *, sandboxed: bool) -> CommandWrites:
    """Apply what the command whose writes are in ``layer`` may change (call it only once
    every process of the command is dead)."""
    workspace = target.writer.root
    top = layer.upper if sandboxed else layer.copy
    session = target.session_layer if sandboxed else None
    roots = [top, *([session] if session is not None and session.is_dir() else []), workspace]
    rules = IgnoreRules(roots, target.tracked)
    read = layer_changes if sandboxed else copy_changes
    try:
        scan = read(layer, workspace, limits=target.limits, ignored=rules)
    except LayerOverBudget as exc:
        refusal = (
            f"none of the command's writes were applied: {exc} (ACODE_LAYER_MAX_BYTES, "
            "ACODE_LAYER_MAX_ENTRIES)"
        )
        denial = {"path": "*", "change": "all", "rule": "layer_budget", "code": OVER_BUDGET,
                  "problem": str(exc)}  # fmt: skip
        return CommandWrites(denied=[denial], refusal=refusal)
    kept: list[str] = []
    if scan.ignored and session is not None:  # first: applying takes the rest of the tree
        session_keep(layer.upper, session, scan.ignored, scan.scrub, target.limits.prefix)
        kept = [p for p in scan.ignored if p not in set(scan.scrub)]
        session_layer_index(session).note_under(kept)  # scanned: hidden as in the workspace
    if target.hidden is not None:
        _unseen_kept(scan, target.hidden)
    writes = layer_apply(
        target.writer, scan, source_root=top, policy=target.policy, journal=target.journal
    )
    writes.kept = kept
    if scan.ignored and session is None:  # no session layer (no sandbox): not kept
        writes.empty_dirs += scan.ignored
    return writes


def _unseen_kept(scan: LayerScan, hidden_among: Callable[[list[str]], set[str]]) -> None:
    """A process saw a hidden file only as its stand-in (empty, or redacted): what it wrote
    over one was made from what it could not read, so it never replaces the real file
    (rule ``hidden_file``; what stands or falls with it is refused too). Only the paths it
    modified are looked up."""
    modified = [c.path for c in scan.changes if c.change == "modified"]
    hidden: set[str] = set()
    for start in range(0, len(modified), 900):
        hidden |= hidden_among(modified[start : start + 900])
    if not hidden:
        return
    kept = []
    for change in scan.changes:
        if change.path in hidden and change.change == "modified":
            scan.refused.append({"path": change.path, "change": change.change,
                                 "rule": "hidden_file", "group": change.group or change.path})  # fmt: skip
        else:
            kept.append(change)
    scan.changes = kept
