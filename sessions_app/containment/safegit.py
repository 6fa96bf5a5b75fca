"""Git run by the server, without running any program a repository names.

A managed workspace's git directory lives in server state (``ACODE_GIT_ROOT``), outside every
mount a command sees, and only the server writes it; an attached workspace's ``.git`` was
written by whoever owns it. Either way git could run programs named there or in
``.gitattributes``: ``core.fsmonitor``, hooks,
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
from collections.abc import Mapping, Sequence
from pathlib import Path

from sessions_app.containment.process import CommandOutcome, Limits, run_process

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
    git_dir: Path,
    args: Sequence[str],
    *,
    work_tree: Path | None = None,
    timeout: float = GIT_TIMEOUT,
    limits: Limits | None = None,
    stdin: int | None = None,
    env: Mapping[str, str] | None = None,
) -> CommandOutcome:
    """Run ``git <args>`` on the repository ``git_dir`` without running its programs.

    Git is pinned to ``git_dir`` (never a parent repository, a ``gitdir:`` file, or a shared
    object store elsewhere) and to ``work_tree`` when given (overriding ``core.worktree``);
    without one it runs as on a bare repository. ``stdin`` is a file descriptor to feed it;
    ``env`` adds variables (``GIT_INDEX_FILE``, author and committer). It reaches no remote
    (every transport is off); only ``push`` and ``clone`` turn on the two a clone may use.
    Raises ``GitRefused`` when the layout would let git read outside.
    """
    if not args:
        raise ValueError("a git subcommand is required")
    checked = checked_git_dir(Path(git_dir))
    with tempfile.TemporaryDirectory(prefix="acode-git-home-") as home:
        full_env = _pinned_env(checked, home, work_tree, env)
        return _git_call(args, full_env, (), timeout=timeout, limits=limits, stdin=stdin)


def _pinned_env(
    checked: Path, home: str, work_tree: Path | None, env: Mapping[str, str] | None
) -> dict[str, str]:
    """The environment pinning git to the checked ``git_dir`` (and ``work_tree``), with the
    caller's ``GIT_*`` variables added (never one of the pins)."""
    full_env = git_env(home)
    full_env["GIT_DIR"] = str(checked)
    if work_tree is not None:
        root = Path(work_tree).resolve(strict=True)
        full_env["GIT_WORK_TREE"] = str(root)
        full_env["GIT_CEILING_DIRECTORIES"] = str(root.parent)
    for name, value in (env or {}).items():
        if not name.startswith("GIT_") or name in full_env:
            raise ValueError(f"not a variable git may be given here: {name}")
        full_env[name] = value
    return full_env


def _git_call(
    args: Sequence[str],
    env: dict[str, str],
    transports: Sequence[str],
    *,
    timeout: float,
    limits: Limits | None = None,
    stdin: int | None = None,
) -> CommandOutcome:
    """Git in the pinned ``env``, hardened, its repository's drivers blanked, and reaching a
    remote only through ``transports`` (configuration; only ``push`` gives any)."""
    cwd = env.get("GIT_WORK_TREE", env["GIT_DIR"])
    config = [*HARDENING, *transports, *_driver_overrides(cwd, env, timeout)]
    return _run(
        _git_argv(config, args), cwd=cwd, env=env, timeout=timeout, limits=limits, stdin=stdin
    )


def push(git_dir: Path, remote: str, refspec: str, *, timeout: float = 120.0) -> CommandOutcome:
    """Push ``refspec`` of the repository ``git_dir`` to ``remote`` (a local path, a
    ``file://`` or an ``https://`` URL: the transports a clone may use, nothing else).

    Credentials can only come from the URL: credential helpers, askpass and prompts are
    off. The caller masks the URL in whatever it shows (git may echo it).
    """
    if not remote or remote.startswith("-") or refspec.startswith("-"):
        raise ValueError(f"not a push destination: {remote!r} {refspec!r}")
    checked = checked_git_dir(Path(git_dir))
    with tempfile.TemporaryDirectory(prefix="acode-git-home-") as home:
        env = _pinned_env(checked, home, None, None)
        args = ["push", "--porcelain", "--no-verify", remote, refspec]
        return _git_call(args, env, CLONE_PROTOCOLS, timeout=timeout)


def init_repository(git_dir: Path, branch: str) -> None:
    """A new, empty repository at ``git_dir`` (no templates: no hooks) whose HEAD names
    ``branch``; its work tree is given per call (``run_git(work_tree=...)``)."""
    target = Path(git_dir)
    if target.exists():
        raise ValueError(f"repository destination exists: {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="acode-git-home-") as home:
        env = git_env(home)
        argv = _git_argv(list(HARDENING), ["init", "--quiet", "--bare", "--template=", str(target)])
        outcome = _run(argv, cwd=str(target.parent), env=env, timeout=GIT_TIMEOUT, limits=None)
    if outcome.exit_code != 0:
        raise GitRefused(f"git init failed: {outcome.stderr.strip()[:300]}")
    for args in (
        ["config", "core.bare", "false"],
        ["symbolic-ref", "HEAD", f"refs/heads/{branch}"],
    ):
        done = run_git(target, args)
        if done.exit_code != 0:
            raise GitRefused(f"git {args[0]} failed: {done.stderr.strip()[:300]}")


def clone(
    source: str,
    dest: Path,
    *,
    timeout: float = 600.0,
    limits: Limits | None = None,
    extra_args: Sequence[str] = (),
) -> CommandOutcome:
    """Clone ``source`` (a local path, ``file://`` or ``https://`` URL) into a new bare
    repository ``dest`` (the work tree is checked out separately, so it never holds ``.git``).

    Only the file and https transports are allowed (no ssh, ext::, fd:: or git://); a local
    source is copied through the transport (``--no-local``), so symlinks in its object
    directory are not followed; no templates (hooks), no submodules.
    """
    if source.startswith("-"):
        raise ValueError(f"not a repository source: {source!r}")
    target = Path(dest)
    if target.exists():
        raise ValueError(f"clone destination exists: {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    parent = target.parent.resolve(strict=True)
    with tempfile.TemporaryDirectory(prefix="acode-git-home-") as home:
        env = git_env(home)
        env["GIT_CEILING_DIRECTORIES"] = str(parent)
        config = [*HARDENING, *CLONE_PROTOCOLS]
        args = ["clone", "--bare", "--no-local", "--template=", "--no-recurse-submodules",
                *extra_args]  # fmt: skip
        argv = _git_argv(config, [*args, "--", source, str(parent / target.name)])
        return _run(argv, cwd=str(parent), env=env, timeout=timeout, limits=limits)


def checked_git_dir(git_dir: Path) -> Path:
    """``git_dir``, if it is a real directory that keeps git inside it."""
    if git_dir.is_symlink() or not git_dir.is_dir():
        raise GitRefused(f"{git_dir} is not a git directory (a file or link is refused)")
    for name in ("commondir", "objects/info/alternates"):
        # Both make git read objects/refs from another repository on this host.
        if (git_dir / name).exists() or (git_dir / name).is_symlink():
            raise GitRefused(f"{git_dir}/{name} points git at another repository")
    with os.scandir(git_dir) as entries:  # e.g. objects/ or config linked to another repo's
        linked = sorted(e.name for e in entries if e.is_symlink())
    if linked:
        raise GitRefused(f"{git_dir} has symbolic links ({', '.join(linked)})")
    return git_dir.resolve()


def _driver_overrides(cwd: str, env: dict[str, str], timeout: float) -> list[str]:
    """Blank every filter/diff/merge driver the repository's config names."""
    listing = _run(
        _git_argv(list(HARDENING), ["config", "--null", "--name-only", "--list"]),
        cwd=cwd, env=env, timeout=timeout, limits=None,
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
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout: float,
    limits: Limits | None,
    stdin: int | None = None,
) -> CommandOutcome:
    # The same runner as sandboxed commands: deadline, output cap, nothing left running.
    return run_process(
        argv, cwd=cwd, env=env, timeout=timeout, limits=limits or Limits(), stdin=stdin
    )
