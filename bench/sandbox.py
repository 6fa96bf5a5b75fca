"""Containment overhead: bubblewrap per command, and safefs per file-tool call.

Targets (issue "Containment that holds"): the sandbox adds under 30 ms p50 to a command
(sandboxed minus the same runner unsandboxed, measured in the same run); a safefs read
(the file-tool check plus the read) under 200 µs. Plain ``subprocess.run`` and plain
``open().read()`` are printed as baselines. Runs in well under a minute; no Django.
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _report import record
from _setup import fmt_time, per_call, verdict

from sessions_app.containment import safefs
from sessions_app.containment.layer import layer_create
from sessions_app.containment.process import Limits, run_process
from sessions_app.containment.safefs import WorkspaceFS
from sessions_app.containment.safegrep import search
from sessions_app.containment.sandbox import BASE_ENV, run_sandboxed, sandbox_available
from sessions_app.containment.view import process_view

RUNS = 40


def percentiles(fn: Callable[[], object], runs: int = RUNS) -> tuple[float, float]:
    """p50 and p95 wall time of ``fn`` over ``runs`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def command_rows(ws: Path) -> list[tuple[str, float, float, float]]:
    """(label, sandboxed p50, unsandboxed p50, sandboxed p95) per command."""
    rows = []
    for argv in (["true"], ["python3", "-c", "pass"]):

        def boxed(argv: list[str] = argv) -> object:
            layer = layer_create(ws.parent / "layers")  # as a write-capable command gets
            try:
                view = process_view(None, workspace=ws, layer=layer)  # the one view
                return run_sandboxed(argv, workspace=ws, writable=True, timeout=30, view=view)
            finally:
                layer.remove()

        def bare(argv: list[str] = argv) -> object:
            return run_process(argv, cwd=str(ws), env=BASE_ENV, timeout=30, limits=Limits())

        def plain(argv: list[str] = argv) -> object:
            return subprocess.run(argv, cwd=ws, env=BASE_ENV, capture_output=True, check=False)

        b50, b95 = percentiles(boxed)
        u50, u95 = percentiles(bare)
        p50, _ = percentiles(plain)
        label = " ".join(argv)
        print(f"info {label:<18} sandboxed   p50 {fmt_time(b50)}  p95 {fmt_time(b95)}")
        print(f"info {label:<18} unsandboxed p50 {fmt_time(u50)}  p95 {fmt_time(u95)}")
        print(f"info {label:<18} plain subprocess.run p50 {fmt_time(p50)}")
        rows.append((label, b50, u50, b95))
    return rows


def file_rows(ws: Path) -> None:
    (ws / "src" / "pkg" / "sub").mkdir(parents=True)
    target = ws / "src" / "pkg" / "sub" / "module.py"
    target.write_text("x = 1\n" * 500)  # 3 KB, 4 components deep
    rel = "src/pkg/sub/module.py"

    def plain() -> bytes:
        with open(target, "rb") as fh:
            return fh.read()

    with WorkspaceFS(ws) as fs:
        held = per_call(lambda: fs.read_bytes(rel, 1 << 20), seconds=0.5, min_calls=500)
        write = per_call(lambda: fs.write_text("out.txt", "y\n"), seconds=0.5, min_calls=20)
        walk = per_call(lambda: list(fs.walk()), seconds=0.3, min_calls=50)
        grep_lit = per_call(lambda: search(fs, "x = 1"), seconds=0.3, min_calls=10)
        grep_re = per_call(lambda: search(fs, r"x = \d"), seconds=0.5, min_calls=5)
    oneshot = per_call(lambda: safefs.read_bytes(ws, rel, 1 << 20), seconds=0.5, min_calls=500)
    base = per_call(plain, seconds=0.5, min_calls=500)
    print(f"baseline         plain open().read()                    {fmt_time(base)}")
    for label, value in (
        ("safefs read, WorkspaceFS held ", held),
        ("safefs read, one-shot function", oneshot),
    ):
        print(
            f"{verdict(value, 200e-6)} {label}         {fmt_time(value)}  target "
            f"{fmt_time(200e-6).strip()}  added {fmt_time(value - base).strip()}"
        )
        record(
            label.strip(),
            value * 1e6,
            "µs",
            target=200.0,
            baseline=base * 1e6,
            note="baseline: plain open().read()",
        )
    print(f"info atomic write (temp + fsync + rename)             {fmt_time(write)}")
    print(f"info walk of a 3-file workspace                       {fmt_time(walk)}")
    print(f"info grep plain text (in-process)                     {fmt_time(grep_lit)}")
    print(f"info grep regex (child interpreter, time-bounded)     {fmt_time(grep_re)}")
    record("atomic write (temp + fsync + rename)", write * 1e6, "µs")
    record("walk of a 3-file workspace", walk * 1e6, "µs")
    record("grep plain text (in-process)", grep_lit * 1e3, "ms")
    record("grep regex (child interpreter, time-bounded)", grep_re * 1e3, "ms")


def main() -> None:
    started = time.perf_counter()
    status = sandbox_available()
    probe = time.perf_counter() - started
    print(f"bwrap: {status.binary}  available: {status.available}  ({status.reason})")
    print(f"process limit: {status.process_limit}; first-use probe (start-up) {fmt_time(probe)}")
    with tempfile.TemporaryDirectory(prefix="acode-bench-") as tmp:
        ws = Path(tmp).resolve() / "ws"
        ws.mkdir()
        if status.available:
            for label, boxed, bare, b95 in command_rows(ws):
                added = boxed - bare
                print(
                    f"{verdict(added, 30e-3)} added command overhead p50 {label:<18} "
                    f"{fmt_time(added)}  target {fmt_time(30e-3).strip()}  (sandboxed p95 "
                    f"{fmt_time(b95).strip()})"
                )
                record(
                    f"added command overhead p50, {label}",
                    added * 1e3,
                    "ms",
                    target=30.0,
                    note=f"sandboxed p50 {boxed * 1e3:.1f} ms, p95 {b95 * 1e3:.1f} ms; "
                    f"unsandboxed p50 {bare * 1e3:.1f} ms",
                )
        else:
            print("MISS sandbox unavailable: command overhead not measured")
            record("sandbox available", 0, "yes/no", target=1, higher_is_better=True)
        file_rows(ws)
    print(f"total bench time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
