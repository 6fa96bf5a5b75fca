"""Server-run git on an agent-controlled repository must not run the repository's programs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sessions_app.containment.safegit import GitRefused, clone, push
from sessions_app.containment.safegit import run_git as run_git_dir


def run_git(work_tree: Path, args: list[str]) -> Any:
    """Server git on a work tree whose git directory is its ``.git`` (an attached workspace)."""
    return run_git_dir(work_tree / ".git", args, work_tree=work_tree)


pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

HOOKS = ("post-index-change", "pre-commit", "post-checkout", "reference-transaction", "pre-auto-gc")


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Plain git, as a naive server would run it (used to arm and to prove the traps)."""
    env = {"PATH": os.environ["PATH"], "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t"}
    env |= {"GIT_COMMITTER_EMAIL": "t@x", "GIT_PAGER": "cat"}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=False
    )


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    path = tmp_path / "markers"
    path.mkdir()
    return path


@pytest.fixture
def evil(tmp_path: Path, markers: Path) -> Path:
    """A program that records that it ran and passes its input through."""
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {markers}/ran\ncat\n')
    script.chmod(0o755)
    return script


@pytest.fixture
def repo(tmp_path: Path, evil: Path) -> Path:
    """A repository whose config, hooks and attributes all try to run ``evil``."""
    ws = tmp_path / "ws"
    ws.mkdir()
    assert git(ws, "init", "-q", ".").returncode == 0
    (ws / "a.txt").write_text("hello\n")
    git(ws, "add", "a.txt")
    assert git(ws, "commit", "-q", "-m", "first").returncode == 0
    for key in ("core.fsmonitor", "diff.external", "core.pager", "core.editor",
                "filter.ev.clean", "filter.ev.smudge", "diff.tc.textconv",
                "diff.tc.command", "core.sshCommand", "gpg.program"):  # fmt: skip
        git(ws, "config", key, str(evil))
    git(ws, "config", "filter.ev.required", "true")
    git(ws, "config", "log.showSignature", "true")
    hooks = ws / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in HOOKS:
        shutil.copy(evil, hooks / name)
    (ws / ".gitattributes").write_text("*.txt filter=ev diff=tc\n")
    (ws / "a.txt").write_text("hello\nchanged\n")
    os.utime(ws / "a.txt", (1e9, 1e9))  # stat differs from the index: git must look inside
    return ws


def ran(markers: Path) -> str:
    log = markers / "ran"
    return log.read_text() if log.exists() else ""


def test_the_traps_are_armed(repo: Path, markers: Path) -> None:
    """Plain git on this repository does run the planted programs (so the tests mean something)."""
    git(repo, "status")
    after_status = ran(markers)
    assert "hooks/post-index-change" in after_status  # the hook
    assert "evil.sh 2 " in after_status  # core.fsmonitor (hook protocol version 2)
    # Its empty fsmonitor answer would hide a.txt from diff: off, to see the next traps.
    git(repo, "-c", "core.fsmonitor=false", "diff")
    assert "evil.sh \n" in ran(markers)  # the clean filter (no arguments)
    assert "evil.sh a.txt " in ran(markers)  # diff.external


@pytest.mark.parametrize(
    "args",
    [["status"], ["status", "--short"], ["diff"], ["diff", "--stat"], ["ls-files"],
     ["log", "-p"], ["show"], ["diff", "HEAD"], ["add", "a.txt"], ["status", "-v"]],
)  # fmt: skip
def test_nothing_planted_runs(repo: Path, markers: Path, args: list[str]) -> None:
    out = run_git(repo, args)
    assert out.exit_code == 0, out.stderr
    assert ran(markers) == ""
    assert out.sandboxed is False


def test_process_filter_does_not_run(repo: Path, markers: Path, evil: Path) -> None:
    git(repo, "config", "filter.ev.process", str(evil))
    for args in (["status"], ["diff"], ["add", "a.txt"]):
        assert run_git(repo, args).exit_code == 0
    assert ran(markers) == ""


def test_output_is_the_real_content(repo: Path, markers: Path) -> None:
    status = run_git(repo, ["status", "--short"])
    assert status.stdout.splitlines() == [" M a.txt", "?? .gitattributes"]
    diff = run_git(repo, ["diff"])
    assert "+changed" in diff.stdout  # the real diff, not a textconv'd or external one
    assert run_git(repo, ["ls-files"]).stdout == "a.txt\n"
    assert ran(markers) == ""


def test_commit_runs_no_hook_editor_or_signing(repo: Path, markers: Path) -> None:
    git(repo, "config", "commit.gpgSign", "true")
    git(repo, "config", "user.name", "t")
    git(repo, "config", "user.email", "t@x")
    assert run_git(repo, ["add", "a.txt"]).exit_code == 0
    out = run_git(repo, ["commit", "-q", "-m", "change"])
    assert out.exit_code == 0, out.stderr
    assert ran(markers) == ""


def test_inherited_git_environment_is_ignored(
    repo: Path, tmp_path: Path, markers: Path, monkeypatch: pytest.MonkeyPatch, evil: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", ".")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor={evil}'")
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(evil))
    out = run_git(repo, ["diff"])
    assert "+changed" in out.stdout
    assert ran(markers) == ""


def test_core_worktree_cannot_point_elsewhere(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("secret")
    git(repo, "config", "core.worktree", str(elsewhere))
    out = run_git(repo, ["status", "--short", "--untracked-files=all"])
    assert "secret.txt" not in out.stdout
    assert "a.txt" in out.stdout


def test_gitfile_or_linked_git_dir_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", ".")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {other / '.git'}\n")
    with pytest.raises(GitRefused):
        run_git(ws, ["status"])
    (ws / ".git").unlink()
    (ws / ".git").symlink_to(other / ".git")
    with pytest.raises(GitRefused):
        run_git(ws, ["status"])


def test_shared_objects_from_another_repository_are_refused(repo: Path, tmp_path: Path) -> None:
    info = repo / ".git" / "objects" / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "alternates").write_text(str(tmp_path / "other" / ".git" / "objects") + "\n")
    with pytest.raises(GitRefused):
        run_git(repo, ["log"])


def test_linked_object_store_is_refused(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", ".")
    objects = repo / ".git" / "objects"
    objects.rename(repo / ".git" / "objects-real")
    objects.symlink_to(other / ".git" / "objects")
    with pytest.raises(GitRefused, match="symbolic links"):
        run_git(repo, ["log"])


def test_a_parent_repository_is_never_used(tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    (parent / "ws").mkdir(parents=True)
    git(parent, "init", "-q", ".")
    with pytest.raises(GitRefused):
        run_git(parent / "ws", ["status"])


def test_clone_of_a_local_repository(repo: Path, tmp_path: Path, markers: Path) -> None:
    dest = tmp_path / "copy"
    out = clone(str(repo), dest)
    assert out.exit_code == 0, out.stderr
    # A bare repository: the work tree is checked out separately, never holding .git.
    shown = run_git_dir(dest, ["show", "HEAD:a.txt"])
    assert shown.exit_code == 0 and shown.stdout == "hello\n"
    assert not any((dest / "hooks").glob("*"))  # no template hooks copied
    assert ran(markers) == ""


def test_clone_refuses_command_transports(tmp_path: Path, markers: Path) -> None:
    out = clone(f"ext::sh -c touch% {markers}/ext", tmp_path / "x")
    assert out.exit_code != 0 and "not allowed" in out.stderr
    assert not (markers / "ext").exists()
    with pytest.raises(ValueError):
        clone("--upload-pack=touch /tmp/x", tmp_path / "y")


def test_only_push_and_clone_reach_a_remote(repo: Path, tmp_path: Path, markers: Path) -> None:
    """Server git reaches no remote unless it is a push or a clone: a fetch, a push spelt as
    plain ``run_git`` or an ``ext::`` remote are refused by git itself (every transport off)."""
    remote = tmp_path / "remote.git"
    assert git(tmp_path, "init", "-q", "--bare", str(remote)).returncode == 0
    for args in (
        ["fetch", str(remote)],
        ["push", str(remote), "HEAD:refs/heads/main"],
        ["fetch", f"ext::sh -c touch% {markers}/ext"],
    ):
        out = run_git(repo, args)
        assert out.exit_code != 0 and "not allowed" in out.stderr, (args, out.stderr)
    assert not (markers / "ext").exists()
    pushed = push(repo / ".git", str(remote), "HEAD:refs/heads/main")
    assert pushed.exit_code == 0, pushed.stderr
    assert git(remote, "rev-parse", "refs/heads/main").returncode == 0
    assert ran(markers) == ""
