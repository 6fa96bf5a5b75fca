"""What the one view costs (issue 35): scanning for secrets, the git view, and a command's
overhead on a small and a large workspace in the same run.

- indexing a 50,000-file workspace (names, stat and content of every file through the
  secret detector): seconds and peak memory;
- the scan a command that writes one file adds (the index notes that file): p50;
- building the git view of a 50,000-file repository (once per commit) and reusing it;
- the overhead acode adds to a command (``execute_command``: the view with its hidden files
  and git view, the sandbox, the layer, applying its writes) minus the bare runner, on a
  3-file and a 50,000-file managed workspace: the large within 1.5x of the small.

Content is real code (this venv's Python sources, cut to 2 KiB, cycled), so the detector
meets what it meets in a repository; one file in 500 holds a token.

    python bench/one_view.py   # ACODE_BENCH_SECRET_FILES=50000 by default
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _report import record
from _setup import fmt_time
from _tools import MemoryJournal  # Django first: the tools below reach models

from roles.writes import CHANGE_PERMISSIONS, WritePolicy
from sessions_app.agent.tools import ToolContext, execute_command
from sessions_app.containment.content import ContentStore
from sessions_app.containment.gitview import GitSource, git_view
from sessions_app.containment.process import Limits, run_process
from sessions_app.containment.sandbox import sandbox_available
from sessions_app.containment.secretfiles import SecretIndex
from sessions_app.containment.view import BASE_ENV
from sessions_app.containment.writes import RecordedWrite, WorkspaceWriter

LARGE = int(os.environ.get("ACODE_BENCH_SECRET_FILES", "50000"))
RUNS = 20
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def sources() -> list[bytes]:
    site = Path(os.__file__).parent
    found = []
    for path in sorted(Path(sys.prefix).rglob("*.py"))[:4000] or sorted(site.rglob("*.py"))[:4000]:
        try:
            found.append(path.read_bytes()[:2048])
        except OSError:
            continue
    return found or [b"x = 1\n" * 300]


def make_repo(root: Path, files: int, bodies: list[bytes]) -> tuple[Path, Path]:
    """A work tree of ``files`` files and its git directory beside it (as acode keeps it)."""
    ws, git_dir = root / f"ws-{files}", root / f"ws-{files}.git"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "guide.md").write_text("# Guide\n")
    (ws / ".env").write_text(f"API_TOKEN={TOKEN}\n")
    for index in range(files - 2):
        folder = ws / "src" / f"pkg{index // 100:04d}"
        if index % 100 == 0:
            folder.mkdir(parents=True)
        body = bodies[index % len(bodies)]
        if index % 500 == 0:
            body += f'\nservice_token = "{TOKEN}"\n'.encode()
        (folder / f"m{index % 100:02d}.py").write_bytes(body)
    env = {**os.environ, "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(ws)}
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b",
                                                 "commit", "-q", "-m", "base"]):  # fmt: skip
        subprocess.run(["git", *args], env=env, check=True, cwd=ws)
    return ws, git_dir


def timed(fn: Callable[[], object], runs: int = RUNS) -> list[float]:
    fn()
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return sorted(out)


def peak(fn: Callable[[], object]) -> tuple[float, int]:
    """Seconds, and how far the process's peak resident memory rose (bytes; not traced, so
    the time is the real one)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    fn()
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return seconds, (after - before) * 1024


def context(ws: Path, git_dir: Path, index: SecretIndex, layers: Path) -> ToolContext:
    recorded: list[RecordedWrite] = []
    return ToolContext(
        workspace=ws,
        writer=WorkspaceWriter(ws, ContentStore(None), index),
        layers_root=layers,
        pending_diffs={},
        journal=MemoryJournal(),
        record_change=recorded.append,
        approve_changes=lambda summary, digest: 0,
        request_changes=lambda summary, comments: None,
        git_dir=git_dir,
        may_write=True,
        write_policy=WritePolicy(frozenset(CHANGE_PERMISSIONS.values()), ("docs/**",)),
    )


def overhead(ctx: ToolContext, argv: list[str]) -> tuple[float, float]:
    def acode() -> object:
        result = execute_command(ctx, {"argv": argv})
        assert "[exit 0]" in result.output, result.output
        return result

    def bare() -> object:
        return run_process(argv, cwd=str(ctx.workspace), env=BASE_ENV, timeout=30, limits=Limits())

    added = sorted(a - b for a, b in zip(timed(acode), timed(bare), strict=True))
    return statistics.median(added), added[int(len(added) * 0.95) - 1]


def main() -> None:
    status = sandbox_available()
    if not (status.available and status.overlay):
        print(f"MISS no sandbox with a copy-on-write layer here: {status.reason}")
        return
    bodies = sources()
    with tempfile.TemporaryDirectory(prefix="acode-bench-secrets-") as tmp:
        root = Path(tmp).resolve()
        started = time.perf_counter()
        small, small_git = make_repo(root, 3, bodies)
        large, large_git = make_repo(root, LARGE, bodies)
        print(f"repositories made in {time.perf_counter() - started:.1f} s ({LARGE} files)")
        indexes = {
            n: SecretIndex(ws, root / f"index-{n}", live=False)
            for n, ws in ((3, small), (LARGE, large))
        }
        seconds, memory = peak(indexes[LARGE].rebuild)
        hidden = len(indexes[LARGE].paths())
        print(
            f"info index {LARGE} files: {seconds:.1f} s, peak RSS +{memory >> 20} MiB, {hidden} hidden"
        )
        record(f"secret index build, {LARGE} files", seconds, "s",
               note=f"peak resident memory +{memory >> 20} MiB; {hidden} files hidden")  # fmt: skip
        indexes[3].rebuild()
        data = b"# changed\n"
        (large / "docs" / "out.md").write_bytes(data)
        note = timed(lambda: indexes[LARGE].note("docs/out.md", data=data), 50)
        print(f"info scan of one written file: p50 {fmt_time(statistics.median(note))}")
        record("secret scan of one written file (index note)", statistics.median(note) * 1e3, "ms")
        view_seconds, view_memory = peak(
            lambda: git_view(GitSource(large_git, large), indexes[LARGE])
        )
        reuse = timed(lambda: git_view(GitSource(large_git, large), indexes[LARGE]))
        print(f"info git view {LARGE} files: built in {view_seconds:.1f} s, reused "
              f"p50 {fmt_time(statistics.median(reuse))}")  # fmt: skip
        record(f"git view build, {LARGE} files (once per commit)", view_seconds, "s",
               note=f"peak resident memory +{view_memory >> 20} MiB")  # fmt: skip
        record(f"git view reuse, {LARGE} files", statistics.median(reuse) * 1e3, "ms")
        git_view(GitSource(small_git, small), indexes[3])
        for label, argv in {
            "true": ["true"],
            "write one file": ["sh", "-c", "echo x > docs/o.md"],
        }.items():
            s50, s95 = overhead(context(small, small_git, indexes[3], root / "layers"), argv)
            l50, l95 = overhead(context(large, large_git, indexes[LARGE], root / "layers"), argv)
            ratio = l50 / s50 if s50 > 0 else float("inf")
            print(f"{'OK  ' if ratio <= 1.5 else 'MISS'} {label:<15} added p50 3 files "
                  f"{fmt_time(s50)}, {LARGE} files {fmt_time(l50)}: {ratio:.2f}x (target 1.50x)")  # fmt: skip
            record(f"command overhead with the view, {label}, 3 files", s50 * 1e3, "ms",
                   note=f"p95 {s95 * 1e3:.1f} ms")  # fmt: skip
            record(
                f"command overhead with the view, {label}, {LARGE} files", l50 * 1e3, "ms",
                baseline=s50 * 1e3, target=s50 * 1.5e3,
                note=f"p95 {l95 * 1e3:.1f} ms; target 1.5x the 3-file figure of the same run",
            )  # fmt: skip


if __name__ == "__main__":
    main()
