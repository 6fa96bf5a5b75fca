"""safefs: workspace file access that no link, hard link, special file or race can escape."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessions_app.containment import safefs
from sessions_app.containment.safefs import Refused, WorkspaceFS, split_path
from sessions_app.containment.safegrep import grep, search


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 42\n")
    (root / "README.md").write_text("# Demo\nhello world\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("server secret")
    return path


@pytest.fixture
def fs(ws: Path) -> Iterator[WorkspaceFS]:
    with WorkspaceFS(ws) as handle:
        yield handle


def test_round_trip(fs: WorkspaceFS, ws: Path) -> None:
    assert fs.read_text("src/app.py", 1000).startswith("def main")
    fs.write_text("pkg/sub/new.py", "x = 1\n")
    assert (ws / "pkg" / "sub" / "new.py").read_text() == "x = 1\n"
    assert fs.exists("pkg/sub/new.py") and not fs.exists("pkg/nope.py")
    assert fs.stat("pkg/sub/new.py").kind == "file" and fs.stat("pkg").kind == "dir"
    fs.create_dirs("a/b/c")
    assert (ws / "a" / "b" / "c").is_dir()
    fs.delete("pkg/sub/new.py")
    assert not (ws / "pkg" / "sub" / "new.py").exists()
    assert safefs.read_bytes(ws, "./README.md", 100) == b"# Demo\nhello world\n"


def test_list_dir_hides_git_and_reports_links(fs: WorkspaceFS, ws: Path, outside: Path) -> None:
    (ws / "link").symlink_to(outside)
    entries = {e.path: e.kind for e in fs.list_dir(".")}
    assert entries == {"src": "dir", "README.md": "file", "link": "symlink"}
    assert [e.path for e in fs.list_dir("src/")] == ["src/app.py"]


@pytest.mark.parametrize(
    "bad",
    ["../outside/secret.txt", "src/../../x", "/etc/passwd", "src//app.py", "src/app.py/",
     "", ".", "a\x00b", "bad\udcff.txt", "x" * 300, "d/" * 2100 + "f", ".git/config",
     "src/.git/x", ".GIT/config", 5, None],
)  # fmt: skip
def test_bad_paths_are_refused_cleanly(fs: WorkspaceFS, bad: Any) -> None:
    with pytest.raises(Refused) as info:
        split_path(bad)
    assert info.value.reason
    with pytest.raises(Refused):
        fs.read_bytes(bad, 100)
    with pytest.raises(Refused):
        fs.write_text(bad, "x")


def test_symlinked_file_to_outside_is_refused(fs: WorkspaceFS, ws: Path, outside: Path) -> None:
    (ws / "leak.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(Refused, match="symbolic link"):
        fs.read_text("leak.txt", 1000)
    with pytest.raises(Refused, match="symbolic link"):
        fs.write_text("leak.txt", "overwritten")
    assert (outside / "secret.txt").read_text() == "server secret"
    assert os.path.islink(ws / "leak.txt")


def test_symlinked_directory_component_is_refused(fs: WorkspaceFS, ws: Path, outside: Path) -> None:
    (ws / "out").symlink_to(outside)
    for call in (
        lambda: fs.read_text("out/secret.txt", 1000),
        lambda: fs.write_text("out/planted.txt", "x"),
        lambda: fs.create_dirs("out/deeper"),
        lambda: fs.delete("out/secret.txt"),
        lambda: fs.list_dir("out"),
        lambda: list(fs.walk("out")),
    ):
        with pytest.raises(Refused, match="symbolic link"):
            call()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_links_are_not_followed_even_inside(fs: WorkspaceFS, ws: Path) -> None:
    (ws / "alias.py").symlink_to(ws / "src" / "app.py")
    with pytest.raises(Refused):
        fs.read_text("alias.py", 1000)


def test_symlinked_git_is_refused(fs: WorkspaceFS, ws: Path) -> None:
    (ws / "meta").symlink_to(ws / ".git")
    with pytest.raises(Refused):
        fs.read_text("meta/config", 1000)
    with pytest.raises(Refused):
        fs.write_text("meta/hooks/post-checkout", "#!/bin/sh\n")
    assert not (ws / ".git" / "hooks").exists()


def test_hard_link_is_refused(fs: WorkspaceFS, ws: Path, outside: Path) -> None:
    os.link(outside / "secret.txt", ws / "hard.txt")
    with pytest.raises(Refused, match="hard link"):
        fs.read_text("hard.txt", 1000)
    with pytest.raises(Refused, match="hard link"):
        fs.write_text("hard.txt", "x")
    assert (outside / "secret.txt").read_text() == "server secret"
    assert "hard.txt" not in list(fs.walk())


def test_fifo_is_refused_without_blocking(fs: WorkspaceFS, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    started = time.monotonic()
    with pytest.raises(Refused, match="not a regular file"):
        fs.read_text("pipe", 1000)
    assert time.monotonic() - started < 1
    assert "pipe" not in list(fs.walk())


def test_size_limit(fs: WorkspaceFS, ws: Path) -> None:
    (ws / "big.txt").write_text("a" * 5000)
    with pytest.raises(Refused, match="limit"):
        fs.read_text("big.txt", 1000)
    assert fs.read_text("big.txt", 1000, truncate=True) == "a" * 1000


def test_lone_surrogate_content_is_refused(fs: WorkspaceFS, ws: Path) -> None:
    with pytest.raises(Refused, match="UTF-8"):
        fs.write_text("x.txt", "bad \udcff")
    assert not (ws / "x.txt").exists()


def test_atomic_write_keeps_the_original_when_writing_fails_half_way(
    fs: WorkspaceFS, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = ws / "src" / "app.py"
    target.chmod(0o750)
    original = target.read_text()
    real_write = os.write
    calls = []

    def failing_write(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    with monkeypatch.context() as patch:
        patch.setattr(os, "write", failing_write)
        with pytest.raises(OSError, match="No space"):
            fs.write_text("src/app.py", "y" * (safefs.WRITE_CHUNK * 4))
    assert len(calls) == 2  # the first chunk was written before the failure
    assert target.read_text() == original
    assert sorted(p.name for p in target.parent.iterdir()) == ["app.py"]  # no temp file left
    fs.write_text("src/app.py", "new\n")
    assert target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o750  # the mode survives the replacement


def test_walk_never_follows_links(fs: WorkspaceFS, ws: Path, outside: Path) -> None:
    (ws / "out").symlink_to(outside)
    (ws / "loop").symlink_to(ws)
    (ws / "leak.txt").symlink_to(outside / "secret.txt")
    (ws / "node_modules" / "pkg").mkdir(parents=True)
    (ws / "node_modules" / "pkg" / "index.js").write_text("x")
    (ws / "src" / "deep" / "er").mkdir(parents=True)
    (ws / "src" / "deep" / "er" / "mod.py").write_text("y")
    assert list(fs.walk()) == ["README.md", "src/app.py", "src/deep/er/mod.py"]
    assert list(safefs.walk(ws, skip_dirs=frozenset())) == [
        "README.md", "node_modules/pkg/index.js", "src/app.py", "src/deep/er/mod.py",
    ]  # fmt: skip
    assert list(fs.walk("src/deep")) == ["src/deep/er/mod.py"]


def test_delete_removes_a_link_not_its_target(fs: WorkspaceFS, ws: Path, outside: Path) -> None:
    (ws / "leak.txt").symlink_to(outside / "secret.txt")
    fs.delete("leak.txt")
    assert not os.path.lexists(ws / "leak.txt")
    assert (outside / "secret.txt").exists()
    with pytest.raises(Refused, match="directory"):
        fs.delete("src")


# Runs in its own process: a thread would mostly wait for the GIL and barely race.
SWAPPER = """
import os, sys, time
ws, outside, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
sub, parked = os.path.join(ws, "sub"), os.path.join(ws, "sub-parked")
swaps, end = 0, time.monotonic() + seconds
while time.monotonic() < end:
    os.rename(sub, parked)
    os.symlink(outside, sub)
    os.unlink(sub)
    os.rename(parked, sub)
    swaps += 1
print(swaps)
"""


def test_racing_directory_swap_never_lets_a_write_or_read_out(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "target"
    outside.mkdir()
    (outside / "bait.txt").write_text("outside content")
    (ws / "sub").mkdir()
    (ws / "sub" / "bait.txt").write_text("inside content")
    racer = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(ws), str(outside), "1.5"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    written = refused = reads = 0
    with WorkspaceFS(ws) as fs:
        while racer.poll() is None:
            try:
                fs.write_text(f"sub/f{written + refused}.txt", "data", create_parents=False)
                written += 1
            except (Refused, OSError):
                refused += 1
            try:
                assert fs.read_text("sub/bait.txt", 100) == "inside content"
                reads += 1
            except (Refused, OSError):
                pass
    swaps = int(racer.communicate()[0])
    assert sorted(p.name for p in outside.iterdir()) == ["bait.txt"]  # nothing landed outside
    assert (outside / "bait.txt").read_text() == "outside content"
    assert swaps > 300, "the racer barely ran; the test proves little"
    assert refused > 0 and written > 0 and reads > 0  # both sides of the race were hit
    landed = {
        p.name for d in ("sub", "sub-parked") if (ws / d).is_dir() for p in (ws / d).iterdir()
    }
    assert len(landed - {"bait.txt"}) == written  # every successful write is in the workspace


def test_grep_literal_and_regex(fs: WorkspaceFS, ws: Path, outside: Path) -> None:
    (ws / "leak.txt").symlink_to(outside / "secret.txt")
    (ws / "bin.dat").write_bytes(b"hello\x00world")
    literal = search(fs, "hello")
    assert [(m.path, m.line_number) for m in literal.matches] == [("README.md", 2)]
    regex = search(fs, r"return \d+")
    assert [(m.path, m.line) for m in regex.matches] == [("src/app.py", "    return 42")]
    assert search(fs, "DEMO", ignore_case=True).matches[0].path == "README.md"
    assert search(fs, "secret").matches == []  # never through the link
    assert search(fs, "a.", fixed=True).matches == []
    with pytest.raises(Refused, match="invalid regular expression"):
        search(fs, "(unclosed")


def test_grep_stops_at_max_matches(fs: WorkspaceFS, ws: Path) -> None:
    (ws / "many.txt").write_text("hit\n" * 50)
    result = grep(ws, "h.t", max_matches=10)
    assert len(result.matches) == 10 and result.truncated


def test_catastrophic_regex_runs_in_linear_time(fs: WorkspaceFS, ws: Path) -> None:
    (ws / "evil.txt").write_text("a" * 50_000 + "!\n")
    assert search(fs, "(a+)+$").matches == []  # RE2: no backtracking to get lost in


def test_patterns_that_need_backtracking_are_refused_clearly(fs: WorkspaceFS, ws: Path) -> None:
    (ws / "a.txt").write_text("abab\n")
    for pattern in ("(ab)\\1", "a(?=b)"):
        with pytest.raises(Refused, match="linear time"):
            search(fs, pattern)
