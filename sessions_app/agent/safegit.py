"""Git run by the server on a workspace the agent could write to, without running its code.

A workspace's ``.git/config`` and ``.gitattributes`` are agent-controlled (sandboxed commands
can write them), and git runs programs named there: ``core.fsmonitor``, hooks,
``diff.external``, textconv and filter drivers, pagers, credential helpers, ssh. Every call
here gets a clean environment (no inherited ``GIT_*``, an empty ``HOME``, no system or
global config) and command-line config that overrides each of those (command-line config
wins over the repository's). Filter and diff drivers have free names, so the ones the
repository configures are listed first (reading config runs nothing) and blanked one by one.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sessions_app.agent.process import CommandOutcome, Limits, run_process

GIT_TIMEOUT = 60.0
# Config that names a program, set to something inert. Empty values mean "none" to git.
HARDENING = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.editor=false",
    "core.askPass=",
    "core.sshCommand=false",
    "diff.external=",
    "sequence.editor=false",
    "credential.helper=",
    "gpg.program=false",
    "gpg.ssh.program=false",
    "gpg.x509.program=false",
    "log.showSignature=false",
    "uploadpack.packObjectsHook=",  # only honoured from protected config; belt and braces
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "protocol.allow=never",
    "submodule.recurse=false",
    "core.attributesFile=/dev/null",
)
CLONE_PROTOCOLS = ("protocol.file.allow=always", "protocol.https.allow=always")
# Subcommands that can show a diff: external diff and textconv are also off per invocation.
DIFF_COMMANDS = frozenset({"diff", "show", "log", "diff-files", "diff-index", "diff-tree"})
DRIVER_KEY = re.compile(
    r"^(filter|diff|merge)\.(.+)\.(clean|smudge|process|required|textconv|command|driver)$"
)
BLANKED = {
    "filter": ("clean=", "smudge=", "process=", "required=false"),
    "diff": ("textconv=", "command=", "cachetextconv=false"),
    "merge": ("driver=",),
}


class GitRefused(ValueError):
    """The workspace's repository is laid out in a way git would use to reach outside it."""


def git_env(home: str) -> dict[str, str]:
    """The whole environment of a server-run git: nothing inherited."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "XDG_CONFIG_HOME": home,
        "LANG": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",  # status must not rewrite the index (no index hooks)
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_PROTOCOL_FROM_USER": "0",
    }


def run_git(
    workspace: Path,
    args: Sequence[str],
    *,
    timeout: float = GIT_TIMEOUT,
    limits: Limits | None = None,
) -> CommandOutcome:
    """Run ``git <args>`` on the repository at ``workspace`` without running its programs.

    Git is pinned to ``workspace/.git`` and ``workspace`` as work tree (never a parent
    repository, never a ``gitdir:`` file, ``core.worktree`` or shared object store pointing
    elsewhere). Raises ``GitRefused`` when the layout would let git read outside.
    """
    if not args:
        raise ValueError("a git subcommand is required")
    root = Path(workspace).resolve(strict=True)
    git_dir = _checked_git_dir(root)
    with tempfile.TemporaryDirectory(prefix="acode-git-home-") as home:
        env = git_env(home)
        env["GIT_DIR"] = str(git_dir)
        env["GIT_WORK_TREE"] = str(root)  # overrides any core.worktree in the repo's config
        env["GIT_CEILING_DIRECTORIES"] = str(root.parent)
        config = list(HARDENING) + _driver_overrides(root, env, timeout)
        argv = _git_argv(config, args)
        return _run(argv, cwd=str(root), env=env, timeout=timeout, limits=limits)


def clone(
    source: str,
    dest: Path,
    *,
    timeout: float = 600.0,
    limits: Limits | None = None,
    extra_args: Sequence[str] = (),
) -> CommandOutcome:
    """Clone ``source`` (a local path, ``file://`` or ``https://`` URL) into new ``dest``.

    Only the file and https transports are allowed (no ssh, ext::, fd:: or git://); a local
    source is copied through the transport (``--no-local``), so symlinks in its object
    directory are not followed; no templates (hooks), no submodules.
    """
    if source.startswith("-"):
        raise ValueError(f"not a repository source: {source!r}")
    target = Path(dest)
    if target.exists():
        raise ValueError(f"clone destination exists: {target}")
    parent = target.parent.resolve(strict=True)
    with tempfile.TemporaryDirectory(prefix="acode-git-home-") as home:
        env = git_env(home)
        env["GIT_CEILING_DIRECTORIES"] = str(parent)
        config = [*HARDENING, *CLONE_PROTOCOLS]
        args = ["clone", "--no-local", "--template=", "--no-recurse-submodules", *extra_args]
        argv = _git_argv(config, [*args, "--", source, str(parent / target.name)])
        return _run(argv, cwd=str(parent), env=env, timeout=timeout, limits=limits)


def _checked_git_dir(root: Path) -> Path:
    """``root/.git``, if it is a real directory that keeps git inside ``root``."""
    git_dir = root / ".git"
    if git_dir.is_symlink() or not git_dir.is_dir():
        raise GitRefused(f"{root} has no .git directory (a .git file or link is refused)")
    for name in ("commondir", "objects/info/alternates"):
        # Both make git read objects/refs from another repository on this host.
        if (git_dir / name).exists() or (git_dir / name).is_symlink():
            raise GitRefused(f"{root}/.git/{name} points git at another repository")
    with os.scandir(git_dir) as entries:  # e.g. objects/ or config linked to another repo's
        linked = sorted(e.name for e in entries if e.is_symlink())
    if linked:
        raise GitRefused(f"{root}/.git has symbolic links ({', '.join(linked)})")
    return git_dir


def _driver_overrides(root: Path, env: dict[str, str], timeout: float) -> list[str]:
    """Blank every filter/diff/merge driver the repository's config names."""
    listing = _run(
        _git_argv(list(HARDENING), ["config", "--null", "--name-only", "--list"]),
        cwd=str(root), env=env, timeout=timeout, limits=None,
    )  # fmt: skip
    if listing.exit_code != 0:
        raise GitRefused(f"git cannot read the repository's config: {listing.stderr.strip()}")
    if listing.truncated:
        raise GitRefused("the repository's git config is too large")
    overrides: list[str] = []
    for key in listing.stdout.split("\0"):
        match = DRIVER_KEY.match(key)
        if not match:
            continue
        section, name = match.group(1), match.group(2)
        if "=" in name or "\n" in name:  # would not survive ``-c key=value`` parsing
            raise GitRefused(f"unsupported {section} driver name {name!r} in the git config")
        overrides += [f"{section}.{name}.{setting}" for setting in BLANKED[section]]
    return sorted(set(overrides))


def _git_argv(config: Sequence[str], args: Sequence[str]) -> list[str]:
    git = shutil.which("git", path="/usr/local/bin:/usr/bin:/bin") or "git"
    argv = [git, "--no-pager", "--no-replace-objects"]
    for item in config:
        argv += ["-c", item]
    argv.append(args[0])
    if args[0] in DIFF_COMMANDS:
        argv += ["--no-ext-diff", "--no-textconv"]
    return argv + list(args[1:])


def _run(
    argv: list[str], *, cwd: str, env: dict[str, str], timeout: float, limits: Limits | None
) -> CommandOutcome:
    # The same runner as sandboxed commands: deadline, output cap, nothing left running.
    return run_process(argv, cwd=cwd, env=env, timeout=timeout, limits=limits or Limits())
