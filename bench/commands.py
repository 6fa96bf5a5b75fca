"""Command overhead by workspace size: the copy-on-write layer costs what a command changes,
not what the repository holds.

Target (issue "Approved equals committed, at any size"): applying a command that writes
5,000 one-line files (``ACODE_BENCH_APPLY_FILES``) takes under 5 s at p50, the whole call:
the sandbox, reading the layer, hashing and storing each blob, the pending-change rows
written in bulk with their journal (a real session in the configured database), the files
moved into place, the layer removed.

Target (issue "Approved means exactly this"): the overhead acode adds to a command
(``execute_command`` through the tool implementation: layer, secret-file view, sandbox,
reading the layer, applying what the role may write, removing the layer) minus the same
command run by the bare runner, p50 and p95, on a 3-file workspace and on a 50,000-file
workspace in the same run: the large one within 1.5x of the small one, and never refused
for size. Memory per command (Python's peak allocation during a call) is printed for both
and must not grow with the workspace.

    python bench/commands.py   # ACODE_BENCH_COMMAND_FILES=50000 by default
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from _report import record
from _setup import django_setup, fmt_time
from _tools import MemoryJournal  # Django first: the tools below reach models

from roles.writes import CHANGE_PERMISSIONS, WritePolicy
from sessions_app.agent.tools import ToolContext, execute_command
from sessions_app.containment import LayerLimits
from sessions_app.containment.content import ContentStore
from sessions_app.containment.process import Limits, run_process
from sessions_app.containment.sandbox import BASE_ENV, sandbox_available
from sessions_app.containment.secretfiles import SecretIndex
from sessions_app.containment.writes import RecordedWrite, WorkspaceWriter

RUNS = 30
LARGE = int(os.environ.get("ACODE_BENCH_COMMAND_FILES", "50000"))
MANY = int(os.environ.get("ACODE_BENCH_APPLY_FILES", "5000"))
APPLY_RUNS = 7
APPLY_TARGET = 5.0
COMMANDS = {
    "true": ["true"],
    "write one file": ["sh", "-c", "echo changed > docs/out.md"],
}


def make_workspace(root: Path, files: int) -> Path:
    """``files`` files of about 1 KB in directories of 100, plus a docs/ folder."""
    ws = root / f"ws-{files}"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "guide.md").write_text("# Guide\n")
    body = "x = 1\n" * 170
    for index in range(files - 1):
        folder = ws / "src" / f"pkg{index // 100:04d}"
        if index % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"m{index % 100:02d}.py").write_text(body)
    (ws / ".env").write_text("TOKEN=not-for-commands\n")
    return ws


def context(ws: Path, layers: Path) -> ToolContext:
    recorded: list[RecordedWrite] = []
    index = SecretIndex(ws, layers.parent / f"{ws.name}-index", live=False)
    return ToolContext(
        workspace=ws,
        writer=WorkspaceWriter(ws, ContentStore(None), index),
        layers_root=layers,
        pending_diffs={},
        journal=MemoryJournal(),
        record_change=recorded.append,
        approve_changes=lambda summary, digest: 0,
        request_changes=lambda summary, comments: None,
        may_write=True,
        write_policy=WritePolicy(frozenset(CHANGE_PERMISSIONS.values()), ("docs/**",)),
    )


def timings(fn: Callable[[], object]) -> list[float]:
    fn()
    out = []
    for _ in range(RUNS):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return sorted(out)


def p50_p95(times: list[float]) -> tuple[float, float]:
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def peak_memory(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def measure(ws: Path, layers: Path, argv: list[str]) -> tuple[float, float, int]:
    """Added overhead p50, p95 (acode's command path minus the bare runner) and peak memory."""
    ctx = context(ws, layers)

    def acode() -> object:
        result = execute_command(ctx, {"argv": argv})
        assert "[exit 0]" in result.output, result.output
        return result

    def bare() -> object:
        return run_process(argv, cwd=str(ws), env=BASE_ENV, timeout=30, limits=Limits())

    full = timings(acode)
    base = timings(bare)
    added = sorted(a - b for a, b in zip(full, base, strict=True))
    p50, p95 = p50_p95(added)
    return p50, p95, peak_memory(acode)


def many_files(token: str) -> list[str]:
    """``MANY`` new one-line files, in a new directory ``docs/<token>``."""
    return ["sh", "-c", (
        f"mkdir -p docs/{token}; i=0; while [ $i -lt {MANY} ]; do echo line $i > "
        f"docs/{token}/f$i.md; i=$((i+1)); done"
    )]  # fmt: skip


def apply_context() -> ToolContext:
    """A Coder's context in a real session (its rows and journal in the database)."""
    from django.conf import settings
    from django.contrib.auth.models import User

    from sessions_app.agent.tool_context import layer_limits
    from sessions_app.services.applies import SessionJournal
    from sessions_app.services.plans import plan_set
    from sessions_app.services.sessions import session_create
    from sessions_app.services.transitions import session_transition
    from sessions_app.services.workspaces import session_git_dir, workspace_writer

    user, _ = User.objects.get_or_create(username="bench-apply")
    session = session_create(owner=user, title="bench: apply 5,000 files")
    plan_set(session=session, steps=["Write many files"], actor="bench")
    for role in ("planner", "coder"):
        session_transition(session=session, to_role=role, reason="bench", actor="bench")
    session.refresh_from_db()
    limits: LayerLimits = layer_limits()
    return ToolContext(
        workspace=Path(session.workspace), writer=workspace_writer(session),
        layers_root=Path(settings.ACODE_LAYERS_ROOT),
        git_dir=session_git_dir(session), pending_diffs={},
        journal=SessionJournal(session, "bench"), layer_limits=limits,
        record_change=lambda write: None, approve_changes=lambda summary, digest: 0,
        request_changes=lambda summary, comments: None, may_write=True,
        write_policy=WritePolicy(frozenset(CHANGE_PERMISSIONS.values()), ("docs/**",)),
    )  # fmt: skip


def measure_apply() -> None:
    """The whole call of a command writing ``MANY`` new one-line files, p50 and p95."""
    django_setup()
    ctx = apply_context()
    times, bare_times = [], []
    for run in range(APPLY_RUNS):
        argv = many_files(f"run{run}")
        start = time.perf_counter()
        result = execute_command(ctx, {"argv": argv})
        times.append(time.perf_counter() - start)
        assert f"and {MANY - 20} more" in result.output, result.output[-500:]
        with tempfile.TemporaryDirectory(prefix="acode-bench-bare-") as scratch:
            start = time.perf_counter()
            run_process(argv, cwd=scratch, env=BASE_ENV, timeout=60, limits=Limits())
            bare_times.append(time.perf_counter() - start)
    times.sort()
    p50, p95 = p50_p95(times)
    bare = statistics.median(bare_times)
    ok = "OK  " if p50 <= APPLY_TARGET else "MISS"
    print(f"{ok} applying {MANY} one-line files: p50 {p50:.2f} s  p95 {p95:.2f} s  "
          f"(the command alone {bare:.2f} s; {(p50 - bare) / MANY * 1e3:.2f} ms a file)")  # fmt: skip
    record(f"applying {MANY} one-line files, whole call p50", p50, "s", target=APPLY_TARGET,
           baseline=bare, note=f"p95 {p95:.2f} s; baseline: the same command run bare "
           f"({bare:.2f} s); {APPLY_RUNS} runs")  # fmt: skip


def main() -> None:
    status = sandbox_available()
    print(f"bwrap: {status.binary}  sandbox: {status.available}  overlay: {status.overlay}")
    if not (status.available and status.overlay):
        print(f"MISS no copy-on-write layer here: {status.reason} {status.overlay_reason}")
        record("copy-on-write layer available", 0, "yes/no", target=1, higher_is_better=True)
        return
    with tempfile.TemporaryDirectory(prefix="acode-bench-commands-") as tmp:
        root = Path(tmp).resolve()
        started = time.perf_counter()
        small, large = make_workspace(root, 3), make_workspace(root, LARGE)
        print(f"workspaces made in {time.perf_counter() - started:.1f} s ({LARGE} files)")
        for label, argv in COMMANDS.items():
            s50, s95, s_mem = measure(small, root / "layers", argv)
            l50, l95, l_mem = measure(large, root / "layers", argv)
            ratio = l50 / s50 if s50 > 0 else float("inf")
            ok = "OK  " if ratio <= 1.5 else "MISS"
            print(f"info {label:<15} 3 files      added p50 {fmt_time(s50)}  p95 {fmt_time(s95)}  "
                  f"peak memory {s_mem / 1024:.0f} KiB")  # fmt: skip
            print(f"info {label:<15} {LARGE} files added p50 {fmt_time(l50)}  p95 {fmt_time(l95)}  "
                  f"peak memory {l_mem / 1024:.0f} KiB")  # fmt: skip
            print(f"{ok} {label:<15} large / small p50 {ratio:.2f}x  target 1.50x")
            record(f"added overhead p50, {label}, 3 files", s50 * 1e3, "ms",
                   note=f"p95 {s95 * 1e3:.1f} ms; peak memory {s_mem // 1024} KiB")  # fmt: skip
            record(
                f"added overhead p50, {label}, {LARGE} files", l50 * 1e3, "ms",
                baseline=s50 * 1e3, target=s50 * 1.5e3,
                note=f"p95 {l95 * 1e3:.1f} ms (3 files: {s95 * 1e3:.1f} ms); peak memory "
                f"{l_mem // 1024} KiB (3 files: {s_mem // 1024} KiB); target: 1.5x the 3-file "
                "figure of the same run",
            )  # fmt: skip
            record(f"peak memory per command, {label}, {LARGE} files vs 3", l_mem / max(s_mem, 1),
                   "x", target=1.5, note=f"{l_mem // 1024} KiB vs {s_mem // 1024} KiB")  # fmt: skip
    measure_apply()


if __name__ == "__main__":
    main()
