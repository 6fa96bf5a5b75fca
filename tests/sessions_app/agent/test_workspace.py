"""What a command wrote: detected, allowed changes returned, every other change undone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sessions_app.agent.snapshot import Snapshot, SnapshotLimits, workspace_snapshot
from sessions_app.agent.workspace import RuleRefused, check_argv, workspace_files
from sessions_app.agent.writes import CommandWrites, command_writes_settle


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel, text in {
        "src/app.py": "x = 1\n",
        "src/util/helpers.py": "def h(): pass\n",
        "docs/guide.md": "# Guide\n",
        "README.md": "readme\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    return root


def settle(
    ws: Path, before: Snapshot, *, may_write: bool = True, globs: tuple[str, ...] = ()
) -> CommandWrites:
    return command_writes_settle(ws, before, may_write=may_write, write_paths=globs)


def test_allowed_changes_are_returned_with_their_texts(ws: Path) -> None:
    before = workspace_snapshot(ws, content=True)
    (ws / "docs" / "guide.md").write_text("# Guide\nmore\n")
    (ws / "docs" / "new.md").write_text("new\n")
    (ws / "docs" / "api").mkdir()
    (ws / "docs" / "api" / "index.md").write_text("api\n")
    (ws / "README.md").unlink()
    writes = settle(ws, before, globs=("docs/**", "README.md"))
    assert writes.denied == []
    got = {c.path: (c.before, c.after) for c in writes.allowed}
    assert got == {
        "docs/guide.md": ("# Guide\n", "# Guide\nmore\n"),
        "docs/new.md": (None, "new\n"),
        "docs/api/index.md": (None, "api\n"),
        "README.md": ("readme\n", None),
    }
    assert (ws / "docs" / "api" / "index.md").exists()


def test_changes_outside_the_write_paths_are_undone(ws: Path) -> None:
    before = workspace_snapshot(ws, content=True)
    (ws / "src" / "app.py").write_text("pwned\n")
    (ws / "src" / "app.py").chmod(0o777)
    (ws / "README.md").unlink()
    (ws / "src" / "evil.py").write_text("evil\n")
    (ws / "src" / "deep" / "er").mkdir(parents=True)
    (ws / "src" / "deep" / "er" / "x.py").write_text("x\n")
    (ws / "run.sh").chmod(0o644)
    (ws / "docs" / "ok.md").write_text("fine\n")
    writes = settle(ws, before, globs=("docs/**",))
    assert [c.path for c in writes.allowed] == ["docs/ok.md"]
    assert {(d["path"], d["change"], d["rule"]) for d in writes.denied} == {
        ("src/app.py", "modified", "write_paths"),
        ("README.md", "deleted", "write_paths"),
        ("src/evil.py", "created", "write_paths"),
        ("src/deep/er/x.py", "created", "write_paths"),
        ("run.sh", "modified", "write_paths"),
    }
    assert (ws / "src" / "app.py").read_text() == "x = 1\n"
    assert (ws / "src" / "app.py").stat().st_mode & 0o777 == 0o644
    assert (ws / "README.md").read_text() == "readme\n"
    assert not (ws / "src" / "evil.py").exists() and not (ws / "src" / "deep").exists()
    assert (ws / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (ws / "docs" / "ok.md").read_text() == "fine\n"


def test_a_role_without_write_permission_changes_nothing(ws: Path) -> None:
    before = workspace_snapshot(ws, content=True)
    (ws / "docs" / "guide.md").write_text("changed\n")
    (ws / "new.txt").write_text("new\n")
    writes = settle(ws, before, may_write=False)
    assert writes.allowed == []
    assert {d["rule"] for d in writes.denied} == {"write_permission"}
    assert (ws / "docs" / "guide.md").read_text() == "# Guide\n"
    assert not (ws / "new.txt").exists()


def test_directory_swapped_for_a_link_is_put_back(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    before = workspace_snapshot(ws, content=True)
    subprocess.run(["rm", "-rf", str(ws / "src")], check=True)
    os.symlink(outside, ws / "src")
    writes = settle(ws, before, globs=("docs/**",))
    assert ("src", "created", "write_paths") in {
        (d["path"], d["change"], d["rule"]) for d in writes.denied
    }
    assert (ws / "src").is_dir() and not (ws / "src").is_symlink()
    assert (ws / "src" / "util" / "helpers.py").read_text() == "def h(): pass\n"
    assert list(outside.iterdir()) == []


def test_file_replaced_by_a_directory_is_put_back(ws: Path) -> None:
    before = workspace_snapshot(ws, content=True)
    (ws / "src" / "app.py").unlink()
    (ws / "src" / "app.py").mkdir()
    (ws / "src" / "app.py" / "inner").write_text("x")
    settle(ws, before, globs=("docs/**",))
    assert (ws / "src" / "app.py").read_text() == "x = 1\n"


def test_links_and_special_files_are_never_left_behind(ws: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("outside\n")
    before = workspace_snapshot(ws, content=True)
    os.symlink("/etc/passwd", ws / "docs" / "passwd.md")
    os.link(ws / "docs" / "guide.md", ws / "docs" / "hard.md")
    os.mkfifo(ws / "docs" / "fifo.md")
    writes = settle(ws, before, globs=("docs/**",))
    assert {(d["path"], d["rule"]) for d in writes.denied} == {
        ("docs/passwd.md", "file_kind"),
        ("docs/hard.md", "file_kind"),
        ("docs/fifo.md", "file_kind"),
    }
    assert sorted(p.name for p in (ws / "docs").iterdir()) == ["guide.md"]
    assert (ws / "docs" / "guide.md").stat().st_nlink == 1
    assert writes.allowed == []  # guide.md only gained and lost a link


def test_git_config_and_hooks_are_restored(ws: Path) -> None:
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    config = (ws / ".git" / "config").read_text()
    before = workspace_snapshot(ws, content=True)
    with (ws / ".git" / "config").open("a") as f:
        f.write("[core]\n\tfsmonitor = touch /tmp/pwned\n")
    (ws / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\ntouch /tmp/pwned\n")
    (ws / ".git" / "objects" / "info" / "alternates").write_text("/elsewhere/objects\n")
    (ws / "sub" / ".git").mkdir(parents=True)
    (ws / "sub" / ".git" / "config").write_text("[core]\n")
    writes = settle(ws, before)  # anywhere allowed, but never .git
    assert {(d["path"], d["rule"]) for d in writes.denied} == {
        (".git/config", "git_dir"),
        (".git/hooks/pre-commit", "git_dir"),
        (".git/objects/info/alternates", "git_dir"),
        ("sub/.git/config", "git_dir"),
    }
    assert (ws / ".git" / "config").read_text() == config
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert not (ws / ".git" / "objects" / "info" / "alternates").exists()
    assert not (ws / "sub" / ".git").exists()


def test_touching_without_changing_is_no_change(ws: Path) -> None:
    before = workspace_snapshot(ws, content=True)
    os.utime(ws / "src" / "app.py", (1, 1))
    (ws / "docs" / "guide.md").write_text("# Guide\n")  # same content, new inode times
    writes = settle(ws, before, globs=("nothing/**",))
    assert writes.allowed == [] and writes.denied == []


def test_directory_mode_changes_outside_the_write_paths_are_undone(ws: Path) -> None:
    before = workspace_snapshot(ws, content=True)
    (ws / "src" / "util").chmod(0o000)
    (ws / "docs").chmod(0o700)
    settle(ws, before, globs=("docs/**",))
    assert (ws / "src" / "util").stat().st_mode & 0o777 == 0o755
    assert (ws / "docs").stat().st_mode & 0o777 == 0o700


def test_a_large_allowed_file_is_recorded_by_its_size(ws: Path) -> None:
    before = workspace_snapshot(ws, content=True)
    (ws / "docs" / "big.md").write_bytes(b"x" * (3 << 20))
    (ws / "docs" / "blob.md").write_bytes(b"\0binary")
    writes = settle(ws, before, globs=("docs/**",))
    got = {c.path: c.after for c in writes.allowed}
    assert got == {
        "docs/big.md": f"[large file: {3 << 20} bytes]\n",
        "docs/blob.md": "[binary or large file: 7 bytes]\n",
    }


def test_snapshot_over_its_limits_refuses(ws: Path) -> None:
    with pytest.raises(RuleRefused) as refused:
        workspace_snapshot(ws, content=True, limits=SnapshotLimits(max_entries=3))
    assert refused.value.rule == "snapshot" and "the command was not run" in refused.value.reason
    with pytest.raises(RuleRefused):
        workspace_snapshot(ws, content=True, limits=SnapshotLimits(max_bytes=10))
    assert workspace_snapshot(ws, content=False, limits=SnapshotLimits(max_bytes=10)).entries


def test_snapshot_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACODE_COMMAND_SNAPSHOT_FILES", "7")
    monkeypatch.setenv("ACODE_COMMAND_SNAPSHOT_BYTES", "99")
    assert SnapshotLimits.from_env() == SnapshotLimits(7, 99)
    monkeypatch.setenv("ACODE_COMMAND_SNAPSHOT_FILES", "many")
    with pytest.raises(ValueError, match="ACODE_COMMAND_SNAPSHOT_FILES"):
        SnapshotLimits.from_env()


def test_workspace_files_honour_gitignore_and_never_follow_links(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("s\n")
    os.symlink(outside, ws / "linked")
    (ws / "build").mkdir()
    (ws / "build" / "out.py").write_text("o\n")
    plain = workspace_files(ws)
    assert "src/app.py" in plain and "linked/secret.py" not in plain
    assert "build/out.py" not in plain  # a skipped directory
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".gitignore").write_text("docs/\n")
    marker = tmp_path / "fsmonitor-ran"
    subprocess.run(
        ["git", "-C", str(ws), "config", "core.fsmonitor", f"touch {marker}; false"], check=True
    )
    listed = workspace_files(ws)
    assert "src/app.py" in listed and "docs/guide.md" not in listed
    assert not any(p.startswith("linked/") and p != "linked" for p in listed)
    assert not marker.exists()


def test_workspace_files_fall_back_when_git_is_refused(ws: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    subprocess.run(["git", "init", "-q", str(elsewhere)], check=True)
    (ws / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    assert "src/app.py" in workspace_files(ws)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ("pytest -q", "argument lists of strings"),
        ([], "argument lists of strings"),
        (["pytest", 1], "argument lists of strings"),
        ([" "], "program name is empty"),
        (["echo", "a\0b"], "NUL"),
        (["echo", "\ud800"], "lone surrogate"),
        (["echo", "x", ">", "f"], "without a shell"),
        (["pytest", "&&", "rm"], "without a shell"),
        (["true"] * 1001, "at most 1000 arguments"),
        (["echo", "x" * 200_000], "longer than"),
    ],
)
def test_argv_shape_is_checked(argv: object, says: str) -> None:
    with pytest.raises(RuleRefused) as refused:
        check_argv(argv)
    assert says in refused.value.reason and refused.value.rule == "argv"


def test_argv_with_shell_characters_inside_an_argument_is_just_an_argument() -> None:
    assert check_argv(["sh", "-c", "echo hi > out.txt"]) == ["sh", "-c", "echo hi > out.txt"]
