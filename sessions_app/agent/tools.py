"""The tool implementations, listed in one place.

Each entry maps a tool name to its implementation, the permissions the implementation
itself demands (checked in addition to the role's effective tools, so an admin edit of a
tool's requirements can never make ``write_file`` runnable without ``write_files``), and
how its arguments are limited (workspace paths, write globs, command patterns). Only
``sessions_app.agent.executor`` calls these, after every check passed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessions_app.agent.redaction import redact_file, redact_text
from sessions_app.agent.workspace import (
    Refused,
    check_argv,
    is_binary,
    resolve,
    run_command,
    workspace_files,
)

READ_CAP = 200_000
OUTPUT_CAP = 64_000
DEFAULT_TEST_ARGV = ["python", "-m", "pytest", "-q"]


@dataclass
class ToolContext:
    """What an implementation may touch: the workspace and the session's pending changes."""

    workspace: Path
    pending_diffs: dict[str, str]
    record_change: Callable[[str, str | None, str | None], None]  # path, before, after
    approve_changes: Callable[[str], int]
    request_changes: Callable[[str, list[Any]], None]
    command_timeout: float = 120.0


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns to the model (already redacted) and records in the audit log."""

    output: str
    target: str
    summary: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolImpl:
    name: str
    run: Callable[[ToolContext, dict[str, Any]], ToolResult]
    permissions: frozenset[str]
    writes_path: bool = False  # the ``path`` argument is subject to the role's write globs
    runs_command: bool = False  # the ``argv`` argument is subject to the role's command patterns


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    if is_binary(data):
        raise Refused(f"{path.name} is a binary file")
    return data[:READ_CAP].decode("utf-8", "replace")


def read_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    target = resolve(ctx.workspace, args.get("path"))
    if not target.real.is_file():
        raise Refused(f"{target.relative!r} is not a file")
    text = _read_text(target.real)
    return ToolResult(
        redact_file(target.relative, text), target.relative, f"{len(text)} characters read"
    )


def list_directory(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    target = resolve(ctx.workspace, args.get("path", "."))
    if not target.real.is_dir():
        raise Refused(f"{target.relative!r} is not a directory")
    lines = []
    for entry in sorted(target.real.iterdir(), key=lambda p: (not p.is_dir(), p.name)):
        if entry.name == ".git":
            continue
        if entry.is_symlink():
            lines.append(f"{entry.name} -> (symlink)")
        elif entry.is_dir():
            lines.append(f"{entry.name}/")
        else:
            lines.append(f"{entry.name}  ({entry.stat().st_size} bytes)")
    return ToolResult("\n".join(lines) or "(empty)", target.relative, f"{len(lines)} entries")


def grep_search(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    try:
        pattern = re.compile(str(args.get("pattern", "")))
    except re.error as exc:
        raise Refused(f"invalid regular expression: {exc}") from exc
    base = resolve(ctx.workspace, args.get("path", "."))
    limit = int(args.get("max_results", 100))
    prefix = "" if base.relative == "." else base.relative.rstrip("/") + "/"
    hits: list[str] = []
    for rel in workspace_files(ctx.workspace):
        if prefix and not (rel == base.relative or rel.startswith(prefix)):
            continue
        full = ctx.workspace / rel
        try:
            data = full.read_bytes()[:READ_CAP]
        except OSError:
            continue
        if is_binary(data):
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
            if pattern.search(line):
                hits.append(f"{rel}:{number}: {redact_file(rel, line)[:300]}")
                if len(hits) >= limit:
                    break
        if len(hits) >= limit:
            break
    return ToolResult("\n".join(hits) or "(no matches)", base.relative, f"{len(hits)} matches")


def analyze_diff(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    only = args.get("path")
    diffs = {p: d for p, d in ctx.pending_diffs.items() if not only or p == only}
    text = "\n".join(redact_text(d) for _, d in sorted(diffs.items())) or "(no pending changes)"
    return ToolResult(text, only or "pending changes", f"{len(diffs)} changed files")


def _write(ctx: ToolContext, args: dict[str, Any], *, create: bool) -> ToolResult:
    target = resolve(ctx.workspace, args.get("path"), for_write=True)
    content = args.get("content")
    if not isinstance(content, str):
        raise Refused("content must be a string")
    exists = target.real.exists()
    if create and exists:
        raise Refused(f"{target.relative!r} already exists; use write_file to change it")
    if not create and not exists:
        raise Refused(f"{target.relative!r} does not exist; use create_file to add it")
    if exists and not target.real.is_file():
        raise Refused(f"{target.relative!r} is not a file")
    before = _read_text(target.real) if exists else ""
    target.real.parent.mkdir(parents=True, exist_ok=True)
    target.real.write_text(content, encoding="utf-8")
    ctx.record_change(target.relative, before if exists else None, content)
    size = len(content.encode("utf-8"))
    verb = "written" if exists else "created"
    return ToolResult(
        f"{target.relative}: {size} bytes {verb}",
        target.relative,
        f"Success ({size} bytes {verb})",
        {"bytes": size},
    )


def write_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return _write(ctx, args, create=False)


def create_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return _write(ctx, args, create=True)


def delete_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    target = resolve(ctx.workspace, args.get("path"), for_write=True)
    if not target.real.is_file():
        raise Refused(f"{target.relative!r} is not an existing file")
    before = _read_text(target.real) if target.real.stat().st_size < READ_CAP else ""
    target.real.unlink()
    ctx.record_change(target.relative, before, None)
    return ToolResult(f"{target.relative} deleted", target.relative, "Success (deleted)")


def _command(ctx: ToolContext, argv: list[str], timeout: float) -> ToolResult:
    result = run_command(ctx.workspace, argv, timeout=timeout, output_cap=OUTPUT_CAP)
    status = "timed out" if result.timed_out else f"exit {result.exit_code}"
    output = f"$ {' '.join(argv)}\n{redact_text(result.output)}\n[{status}]"
    return ToolResult(
        output,
        " ".join(argv)[:1000],
        status,
        {"exit_code": result.exit_code, "timed_out": result.timed_out},
    )


def execute_command(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    argv = check_argv(args.get("argv"))
    timeout = min(float(args.get("timeout_seconds", ctx.command_timeout)), ctx.command_timeout)
    return _command(ctx, argv, timeout)


def run_tests(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    argv = check_argv(args.get("argv") or DEFAULT_TEST_ARGV)
    return _command(ctx, argv, ctx.command_timeout)


def submit_review(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    verdict = args.get("verdict")
    summary = str(args.get("summary", ""))
    if verdict == "approve":
        count = ctx.approve_changes(summary)
        return ToolResult(
            f"Approved {count} pending changes.", "pending changes", f"approved {count}"
        )
    if verdict == "request_changes":
        ctx.request_changes(summary, list(args.get("comments", [])))
        return ToolResult(
            "Revision requested; the changes stay pending.", "pending changes", "revision requested"
        )
    raise Refused("verdict must be 'approve' or 'request_changes'")


READ = frozenset({"read_files"})
TOOL_IMPLEMENTATIONS: dict[str, ToolImpl] = {
    impl.name: impl
    for impl in (
        ToolImpl("read_file", read_file, READ),
        ToolImpl("list_directory", list_directory, READ),
        ToolImpl("grep_search", grep_search, READ),
        ToolImpl("analyze_diff", analyze_diff, READ),
        ToolImpl(
            "write_file", write_file, frozenset({"read_files", "write_files"}), writes_path=True
        ),
        ToolImpl("create_file", create_file, frozenset({"create_files"}), writes_path=True),
        ToolImpl(
            "delete_file", delete_file, frozenset({"read_files", "delete_files"}), writes_path=True
        ),
        ToolImpl(
            "execute_command", execute_command, frozenset({"execute_commands"}), runs_command=True
        ),
        ToolImpl("run_tests", run_tests, frozenset({"execute_commands"}), runs_command=True),
        ToolImpl("submit_review", submit_review, frozenset({"approve_changes"})),
    )
}
