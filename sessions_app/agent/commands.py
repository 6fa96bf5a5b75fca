"""The command tools (``execute_command``, ``run_tests``): a program run in the sandbox, in
the one view of the workspace (``process_view``), writing to a copy-on-write layer whose
content the server applies, as far as the role may write, once every process is dead
(``containment.command_writes``: as one unit; what the repository ignores is kept in the
session's layer)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sessions_app.agent.toolkit import ToolContext, ToolResult
from sessions_app.containment import (
    BASE_ENV,
    SYSTEM_DIRS,
    CommandWrites,
    Limits,
    command_writes,
    layer_create,
    process_view,
    redact_text,
    run_sandboxed,
    sandbox_required,
)

OUTPUT_CAP = 64_000
MAX_LISTED_WRITES = 20


def command_ro_paths() -> list[Path]:
    """Host paths a command needs read-only: this Python (venv and base) for ``python -m``."""
    paths = []
    for prefix in {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}:
        inside_system = any(prefix.is_relative_to(d) for d in SYSTEM_DIRS)
        if len(prefix.parts) >= 3 and not inside_system:
            paths.append(prefix)
    return sorted(paths)


def command_env() -> dict[str, str]:
    """Variables a command gets on top of the sandbox's base environment."""
    return {
        # Resolved, as command_ro_paths mounts it: a venv reached through a symlink (a
        # worktree sharing one) is not inside the sandbox under its link's name.
        "PATH": f"{Path(sys.prefix).resolve() / 'bin'}:{BASE_ENV['PATH']}",
        "PYTHONUNBUFFERED": "1",
        # pytest's cache is scratch: in the sandbox's private /tmp, not the workspace.
        "PYTEST_ADDOPTS": "-o cache_dir=/tmp/.acode-pytest-cache",
    }


def _command(ctx: ToolContext, argv: list[str], timeout: float) -> ToolResult:
    # A write-capable command writes to a layer of its own; without the sandbox (development
    # only) every command runs in a copy, so none can change the workspace directly.
    sandboxed = sandbox_required()
    layer = layer_create(ctx.layers_root) if ctx.may_write or not sandboxed else None
    writes = CommandWrites()
    try:
        view = process_view(
            ctx.sight(), workspace=ctx.workspace, layer=layer, env=command_env(),
            session_layer=ctx.session_layer,
        )  # fmt: skip
        result = run_sandboxed(
            argv, workspace=ctx.workspace, writable=ctx.may_write, network=ctx.network,
            timeout=timeout, limits=Limits(max_output=OUTPUT_CAP), ro_paths=command_ro_paths(),
            view=view,
        )  # fmt: skip
        if layer is not None:  # every process of the command is dead by now
            target = ctx.write_target(masked=view.masks is not None)
            writes = command_writes(layer, target, sandboxed=sandboxed)
    finally:
        if layer is not None:
            layer.remove()
    return _command_result(ctx, argv, result, writes, view)


def _command_result(
    ctx: ToolContext, argv: list[str], result: Any, writes: CommandWrites, view: Any
) -> ToolResult:
    """What the model is told about a command, and what its outcome row records."""
    if result.killed_reason and not result.timed_out:
        status = f"killed ({result.killed_reason})"
    else:
        status = "timed out" if result.timed_out else f"exit {result.exit_code}"
    text = redact_text(result.output)
    if result.truncated:
        text += f"\n[output truncated at {OUTPUT_CAP} bytes a stream]"
    notes = []
    if writes.refusal:
        notes.append(writes.refusal)
    if writes.allowed:
        notes.append("recorded as pending changes: " + _listing(c.path for c in writes.allowed))
    denied = [d for d in writes.denied if d.get("rule") != "layer_budget"]
    if denied:
        notes.append(
            "discarded (your role may not change these): "
            + _listing(f"{d['path']} ({d['change']}, {d['rule']})" for d in denied)
        )
    if writes.kept:
        notes.append("kept for this session, never reviewed (the repository ignores them): "
                     + _listing(writes.kept))  # fmt: skip
    if writes.empty_dirs:
        notes.append("not kept (empty directories and ignored output with nowhere to go): "
                     + _listing(writes.empty_dirs))  # fmt: skip
    if not result.sandboxed:
        notes.append("ran WITHOUT the sandbox (ACODE_SANDBOX=off)")
    output = f"$ {' '.join(argv)}\n{text}\n[{status}]" + "".join(f"\n[{n}]" for n in notes)
    details = {
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "killed_reason": result.killed_reason,
        "truncated": result.truncated,
        "sandboxed": result.sandboxed,
        "writable": ctx.may_write,
        "network": ctx.network,
        "hidden_secrets": view.hidden_count,
        "git_view": view.git_view is not None,
        "duration": round(result.duration, 3),
        "recorded": [c.path for c in writes.allowed][:100],
        "recorded_count": len(writes.allowed),
        "kept": writes.kept[:100],
        "discarded": len(writes.denied),
    }
    return ToolResult(output, " ".join(argv)[:1000], status, details, writes.denied)


def _listing(items: Iterable[str]) -> str:
    names = list(items)
    shown = ", ".join(names[:MAX_LISTED_WRITES])
    more = len(names) - MAX_LISTED_WRITES
    return shown + (f" and {more} more" if more > 0 else "")


def execute_command(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    timeout = min(float(args.get("timeout_seconds", ctx.command_timeout)), ctx.command_timeout)
    return _command(ctx, args["argv"], timeout)


def run_tests(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return _command(ctx, args["argv"], ctx.command_timeout)
