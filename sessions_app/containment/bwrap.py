"""What a sandboxed command sees: bubblewrap's options for the mounts, namespaces, user and
environment of one command (``sandbox`` decides whether and how it runs).

The system directories read-only, a curated part of ``/etc``, its own ``/proc``, ``/dev``
and ``/tmp``, the workspace (read-only, or an overlay onto the command's layer), secret
files shown empty and a read-only view of the session's git directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sessions_app.containment.layer import Layer
from sessions_app.containment.process import Limits

# Mounted read-only when present; symlinks (merged /usr) are recreated as symlinks.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Only what programs need from /etc: all of it would expose pip.conf, npmrc, shadow, keys.
# Each entry is a bind mount (about 0.5 ms of start-up), so the list is short.
ETC_ENTRIES = ("passwd", "group", "hosts", "nsswitch.conf", "ld.so.cache", "alternatives")
ETC_NETWORK = (
    "resolv.conf", "host.conf", "gai.conf", "ssl/certs", "ssl/openssl.cnf", "ca-certificates",
    "pki/tls/certs", "pki/ca-trust", "crypto-policies", "protocols", "services",
)  # fmt: skip
SANDBOX_UID = 1000  # what commands run as inside: not root, so no capabilities at all
GIT_VIEW = "/run/acode-git"
# What a read-only view of a git directory needs (never its config, which may hold a
# remote's credentials: a minimal one acode writes is shown instead).
GIT_VIEW_ENTRIES = ("HEAD", "objects", "refs", "packed-refs", "index", "shallow")
GIT_VIEW_CONFIG = "acode-view-config"


@dataclass(frozen=True)
class SandboxStatus:
    """Whether sandboxed commands can run here, with which binary, and if not, why."""

    available: bool
    binary: str | None
    reason: str
    process_limit: str = "none"  # "cgroup", "rlimit" or "none" (host root without cgroup)
    disable_userns: bool = False
    tmp_size: bool = False
    overlay: bool = False  # write-capable commands need it: they are refused without
    overlay_reason: str = ""


@dataclass(frozen=True)
class SandboxView:
    """What of the server a command sees besides the system: a layer for its writes,
    secret files shown empty, and a read-only view of a git directory."""

    layer: Layer | None = None
    hidden: tuple[str, ...] = ()  # workspace-relative regular files shown empty
    git_dir: Path | None = None
    # The session's layer (what the repository ignores, kept between commands): a lower
    # layer above the workspace, never applied to it.
    session_layer: Path | None = None


def bwrap_options(
    status: SandboxStatus,
    workspace: str,
    writable: bool,
    network: bool,
    limits: Limits,
    env: Mapping[str, str],
    ro_paths: Sequence[str],
    view: SandboxView,
    empty_file: str,
) -> list[str]:
    """bubblewrap's options for one command: the mounts, namespaces, user and environment
    described in ``sandbox``'s docstring. ``empty_file`` is mounted over each hidden file."""
    opts = ["--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
    opts += ["--hostname", "sandbox", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    if os.geteuid() == 0:
        # Host root maps to a user namespace that bwrap sets up with capabilities; drop them
        # all (other users get none anyway, and a setuid bwrap refuses --cap-drop from them).
        opts += ["--cap-drop", "ALL"]
    if status.disable_userns:
        opts.append("--disable-userns")  # no nested namespaces to regain capabilities in
    if network:
        opts.append("--share-net")
    for name in SYSTEM_DIRS:
        if os.path.islink(name):
            opts += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            opts += ["--ro-bind", name, name]
    for entry in ETC_ENTRIES + (ETC_NETWORK if network else ()):
        opts += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
    if os.path.islink("/etc/localtime"):  # a link into /usr/share/zoneinfo: no mount needed
        opts += ["--symlink", os.readlink("/etc/localtime"), "/etc/localtime"]
    opts += ["--proc", "/proc", "--dev", "/dev"]
    if status.tmp_size:
        opts += ["--size", str(limits.tmp_bytes)]
    opts += ["--tmpfs", "/tmp"]
    for path in ro_paths:
        opts += ["--ro-bind", path, path]
    lowers = ["--overlay-src", workspace]  # bwrap stacks them in order: the first lowest
    if view.session_layer is not None and view.session_layer.is_dir():
        lowers += ["--overlay-src", str(view.session_layer)]
    if writable:
        assert view.layer is not None
        upper, work = str(view.layer.upper), str(view.layer.work)
        opts += [*lowers, "--overlay", upper, work, workspace]
    elif len(lowers) > 2:
        opts += [*lowers, "--ro-overlay", workspace]
    else:
        opts += ["--ro-bind", workspace, workspace]
    for rel in view.hidden:  # an empty, read-only file in place of each secret
        opts += ["--ro-bind", empty_file, f"{workspace}/{rel}"]
    env = dict(env)
    if view.git_dir is not None:
        opts += _git_view(view.git_dir)
        env.update(GIT_DIR=GIT_VIEW, GIT_WORK_TREE=workspace)
    opts += ["--remount-ro", "/", "--chdir", workspace, "--clearenv"]
    for name, value in env.items():
        opts += ["--setenv", name, value]
    return opts


def _git_view(git_dir: Path) -> list[str]:
    """Read-only mounts of what ``git status``/``log``/``diff`` need from a git directory,
    with acode's minimal config in place of the repository's."""
    opts: list[str] = []
    for name in GIT_VIEW_ENTRIES:
        if os.path.lexists(git_dir / name) and not os.path.islink(git_dir / name):
            opts += ["--ro-bind", str(git_dir / name), f"{GIT_VIEW}/{name}"]
    config = git_dir / GIT_VIEW_CONFIG
    if config.is_file() and not config.is_symlink():
        opts += ["--ro-bind", str(config), f"{GIT_VIEW}/config"]
    return opts
