"""bubblewrap's options for a view: the mounts, namespaces, user and environment of one
process (``view`` decides what it sees, ``sandbox`` whether and how it runs).

The system directories read-only, a curated part of ``/etc``, its own ``/proc``, ``/dev``
and ``/tmp``, the workspace (read-only, or an overlay onto the process's layer), hidden
files shown empty or redacted, masked directories and a read-only git view.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
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


_SEAL = object()


def view_seal() -> object:
    """The mark of a view made by ``view.process_view`` (the one view)."""
    return _SEAL


@dataclass(frozen=True)
class SandboxView:
    """What of the server a process sees besides the system (made only by
    ``sessions_app.containment.view.process_view``): a layer for its writes, the masks tree
    of the hidden files (what stands in for each, at its path), directories masked empty, a
    git view (or, for a role that reads secrets, the repository itself) and the whole
    environment."""

    layer: Layer | None = None
    masks: Path | None = None  # a tree of stand-ins laid over the workspace (hidden files)
    hidden_count: int = 0
    git_view: Path | None = None  # a view repository, mounted whole
    git_dir: Path | None = None  # the real git directory (roles that read secrets)
    masked: tuple[str, ...] = ()  # workspace-relative directories shown empty
    env: tuple[tuple[str, str], ...] = ()
    seal: object = None
    # The session's layer (what the repository ignores, kept between commands): a lower
    # layer above the workspace, under the masks, never applied to the workspace.
    session_layer: Path | None = None
    session_masks: Path | None = None  # the stand-ins of what the session layer hides


def bwrap_options(
    status: SandboxStatus,
    workspace: str,
    writable: bool,
    network: bool,
    limits: Limits,
    ro_paths: Sequence[str],
    view: SandboxView,
) -> list[str]:
    """bubblewrap's options for one process: the mounts, namespaces, user and environment
    described in ``sandbox``'s docstring, of a view ``process_view`` made."""
    if view.seal is not view_seal():
        raise ValueError("a sandbox view must come from process_view (the one view)")
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
    opts += _workspace_mounts(workspace, writable, view)
    if view.git_view is not None:
        opts += ["--ro-bind", str(view.git_view), GIT_VIEW]
    elif view.git_dir is not None:
        opts += _git_view(view.git_dir)
    opts += ["--remount-ro", "/", "--chdir", workspace, "--clearenv"]
    for name, value in view.env:
        opts += ["--setenv", name, value]
    return opts


def _workspace_mounts(workspace: str, writable: bool, view: SandboxView) -> list[str]:
    """The workspace, with the session's layer above it and the masks tree above both when
    files are hidden (one mount however many: bwrap's last --overlay-src is the uppermost),
    under the command's layer; then the directories masked empty."""
    opts: list[str] = []
    sources = ["--overlay-src", workspace]
    if view.session_layer is not None and view.session_layer.is_dir():
        sources += ["--overlay-src", str(view.session_layer)]
        if view.session_masks is not None:
            sources += ["--overlay-src", str(view.session_masks)]
    if view.masks is not None:
        sources += ["--overlay-src", str(view.masks)]
    if writable:
        assert view.layer is not None
        upper, work = str(view.layer.upper), str(view.layer.work)
        opts += [*sources, "--overlay", upper, work, workspace]
    elif len(sources) > 2:  # masks or a session layer: a read-only overlay
        opts += [*sources, "--ro-overlay", workspace]
    else:
        opts += ["--ro-bind", workspace, workspace]
    for rel in view.masked:  # e.g. an attached workspace's .git: an empty directory
        opts += ["--tmpfs", f"{workspace}/{rel}", "--remount-ro", f"{workspace}/{rel}"]
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
