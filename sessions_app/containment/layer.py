"""The copy-on-write layer a command writes to, and what is in it once the command is over.

A write-capable command sees its workspace through an overlay: reads come from the
workspace (the lower layer), every write lands in an upper directory in server state
(``ACODE_LAYERS_ROOT``). The workspace itself never changes while a command runs, so
nothing a command does can race the check. When the call has ended and all its processes
are dead, ``layer_changes`` reads the upper directory without following links
(``nofollow``) and says what the command changed: files created or modified (with their
mode), entries deleted (overlay whiteouts, directories made opaque or replaced), and
entries of kinds a workspace may not gain (links, devices, FIFOs, sockets). The caller
applies what the role may write and removes the layer with everything else in it.

Under ``ACODE_SANDBOX=off`` (development only) there is no overlay: the command runs in a
copy of the workspace, and ``copy_changes`` compares the copy with the workspace instead.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat as st
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sessions_app.containment.nofollow import entry_names, lstat_at, open_dir, opened_file

# writes.py reads the files of a layer through these, by this module's name.
from sessions_app.containment.nofollow import opened_path as opened_path
from sessions_app.containment.nofollow import read_head as read_head
from sessions_app.containment.safefs import DIR_FLAGS

OPAQUE_XATTRS = ("user.overlay.opaque", "trusted.overlay.opaque")
COMPARE_CHUNK = 1 << 20


@dataclass(frozen=True)
class Layer:
    """The directories of one command's overlay: ``upper`` holds its writes."""

    path: Path

    @property
    def upper(self) -> Path:
        return self.path / "upper"

    @property
    def work(self) -> Path:
        return self.path / "work"

    @property
    def copy(self) -> Path:
        """The workspace copy a command runs in when there is no sandbox."""
        return self.path / "copy"

    def remove(self) -> None:
        """Delete the layer and everything the command left in it."""
        remove_tree(self.path)


def layer_create(root: Path) -> Layer:
    """A fresh, private layer directory under ``root`` (made if missing)."""
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = root / f"layer-{secrets.token_hex(8)}"
    path.mkdir(mode=0o700)
    layer = Layer(path)
    layer.upper.mkdir(mode=0o755)
    layer.work.mkdir(mode=0o700)
    return layer


def remove_tree(path: Path) -> None:
    """``rm -rf`` that also removes what overlayfs leaves unreadable (its work directory)."""

    def fix(_func: object, failed: str, _exc: object) -> None:
        parent = os.path.dirname(failed)
        with contextlib.suppress(OSError):
            os.chmod(parent, 0o700)
        with contextlib.suppress(OSError):
            if os.path.isdir(failed) and not os.path.islink(failed):
                os.chmod(failed, 0o700)
                shutil.rmtree(failed, ignore_errors=True)
            else:
                os.unlink(failed)

    if os.path.lexists(path):
        shutil.rmtree(path, onerror=fix)


@dataclass(frozen=True)
class LayerChange:
    """One thing a command changed, as a workspace-relative path.

    ``change`` is created, modified or deleted; ``kind`` is what is there now (file, dir,
    symlink, other) or, for a deletion, what was there. ``mode`` is the permission bits
    (special bits included) of what is there now. ``source`` is where its content can be
    read (a path relative to the layer's upper directory, or to the copy), for files.
    """

    path: str
    change: str
    kind: str
    mode: int = 0
    size: int = 0
    source: str = ""


def _kind(mode: int) -> str:
    if st.S_ISREG(mode):
        return "file"
    if st.S_ISDIR(mode):
        return "dir"
    if st.S_ISLNK(mode):
        return "symlink"
    return "other"


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def _is_whiteout(info: os.stat_result) -> bool:
    return st.S_ISCHR(info.st_mode) and info.st_rdev == 0


def _is_opaque(dir_fd: int) -> bool:
    for attr in OPAQUE_XATTRS:
        try:
            if os.getxattr(dir_fd, attr) == b"y":
                return True
        except OSError:
            continue
    return False


class _Changes:
    """Changes by path; a later entry for a path overrides an earlier one (a file deleted
    with its directory and then written again is modified, not deleted)."""

    def __init__(self) -> None:
        self.by_path: dict[str, LayerChange] = {}

    def add(self, change: LayerChange) -> None:
        earlier = self.by_path.get(change.path)
        if earlier is not None and earlier.change == "deleted" and change.change == "created":
            change = LayerChange(
                change.path, "modified", change.kind, change.mode, change.size, change.source
            )
        self.by_path[change.path] = change

    def ordered(self) -> list[LayerChange]:
        """Deletions deepest first, then everything else shallowest first."""
        gone = [c for c in self.by_path.values() if c.change == "deleted"]
        rest = [c for c in self.by_path.values() if c.change != "deleted"]
        gone.sort(key=lambda c: (-c.path.count("/"), c.path))
        rest.sort(key=lambda c: (c.path.count("/"), c.path))
        return gone + rest


def layer_changes(layer: Layer, workspace: Path) -> list[LayerChange]:
    """What the command whose writes are in ``layer`` changed in ``workspace``.

    Call it only once every process of the command is dead. Nothing is followed: the upper
    directory and the workspace are read through directory fds opened with ``O_NOFOLLOW``,
    and only regular files are ever opened for reading.
    """
    return _read_changes(layer.upper, workspace, _walk_upper)


def _walk_upper(upper: int, lower: int, prefix: str, changes: _Changes) -> None:
    for name in entry_names(upper):
        path = _join(prefix, name)
        info = os.stat(name, dir_fd=upper, follow_symlinks=False)
        below = lstat_at(lower, name)
        if _is_whiteout(info):
            if below is not None:
                _deleted(lower, name, path, below, changes)
            continue
        if st.S_ISDIR(info.st_mode):
            _upper_dir(upper, lower, name, path, info, below, changes)
            continue
        if below is not None and st.S_ISDIR(below.st_mode):
            _deleted(lower, name, path, below, changes)  # a directory replaced by a non-directory
        kind = _kind(info.st_mode)
        mode = st.S_IMODE(info.st_mode)
        if below is None or st.S_ISDIR(below.st_mode):
            changes.add(LayerChange(path, "created", kind, mode, info.st_size, path))
        elif kind != "file" or not _same_file(upper, lower, name, info, below):
            changes.add(LayerChange(path, "modified", kind, mode, info.st_size, path))


def _upper_dir(
    upper: int,
    lower: int,
    name: str,
    path: str,
    info: os.stat_result,
    below: os.stat_result | None,
    changes: _Changes,
) -> None:
    child = open_dir(upper, name)
    if child < 0:
        return
    try:
        below_is_dir = below is not None and st.S_ISDIR(below.st_mode)
        if below is not None and not below_is_dir:
            _deleted(lower, name, path, below, changes)  # a file or link replaced by a directory
        if below is not None and below_is_dir and _is_opaque(child):
            _deleted(lower, name, path, below, changes)  # emptied, then filled again
            below_is_dir = False
        mode = st.S_IMODE(info.st_mode)
        if mode & 0o7000:
            changes.add(LayerChange(path, "modified", "dir", mode))
        lower_child = open_dir(lower, name) if below_is_dir else -1
        try:
            _walk_upper(child, lower_child, path, changes)
        finally:
            if lower_child >= 0:
                os.close(lower_child)
    finally:
        os.close(child)


def _deleted(lower: int, name: str, path: str, below: os.stat_result, changes: _Changes) -> None:
    """``path`` (and, for a directory, everything under it) no longer exists."""
    if not st.S_ISDIR(below.st_mode):
        changes.add(LayerChange(path, "deleted", _kind(below.st_mode)))
        return
    if name.lower() == ".git":  # not walked: git metadata is refused as a whole
        changes.add(LayerChange(path, "deleted", "dir"))
        return
    child = open_dir(lower, name)
    if child < 0:
        return
    try:
        for entry in entry_names(child):
            info = lstat_at(child, entry)
            if info is not None:
                _deleted(child, entry, _join(path, entry), info, changes)
    finally:
        os.close(child)
    changes.add(LayerChange(path, "deleted", "dir"))  # after what it held (deepest first)


def _same_file(
    upper: int, lower: int, name: str, info: os.stat_result, below: os.stat_result
) -> bool:
    """Whether a copied-up file still has its lower content and mode (opened, touched)."""
    if not st.S_ISREG(below.st_mode) or below.st_size != info.st_size:
        return False
    if st.S_IMODE(below.st_mode) != st.S_IMODE(info.st_mode):
        return False
    with opened_file(upper, name) as a, opened_file(lower, name) as b:
        if a < 0 or b < 0:
            return False
        while True:
            left, right = os.read(a, COMPARE_CHUNK), os.read(b, COMPARE_CHUNK)
            if left != right:
                return False
            if not left:
                return True


def copy_workspace(workspace: Path, layer: Layer) -> Path:
    """A copy of the workspace for a command run without a sandbox (development only)."""
    shutil.copytree(workspace, layer.copy, symlinks=True)
    return layer.copy


def copy_changes(layer: Layer, workspace: Path) -> list[LayerChange]:
    """What a command changed in the copy ``copy_workspace`` made, against ``workspace``."""
    return _read_changes(layer.copy, workspace, _compare)


def _read_changes(
    top: Path, workspace: Path, walk: Callable[[int, int, str, _Changes], None]
) -> list[LayerChange]:
    """``walk`` over the command's tree ``top`` (never followed) against ``workspace``."""
    changes = _Changes()
    new = os.open(top, DIR_FLAGS)
    try:
        old = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            walk(new, old, "", changes)
        finally:
            os.close(old)
    finally:
        os.close(new)
    return changes.ordered()


def _compare(new: int, old: int, prefix: str, changes: _Changes) -> None:
    now = set(entry_names(new)) if new >= 0 else set()
    before = set(entry_names(old)) if old >= 0 else set()
    for name in sorted(before - now):
        info = lstat_at(old, name)
        if info is not None:
            _deleted(old, name, _join(prefix, name), info, changes)
    for name in sorted(now):
        path = _join(prefix, name)
        info = os.stat(name, dir_fd=new, follow_symlinks=False)
        below = lstat_at(old, name)
        if st.S_ISDIR(info.st_mode):
            if below is not None and not st.S_ISDIR(below.st_mode):
                _deleted(old, name, path, below, changes)
            child, old_child = open_dir(new, name), open_dir(old, name)
            try:
                _compare(child, old_child, path, changes)
            finally:
                for fd in (child, old_child):
                    if fd >= 0:
                        os.close(fd)
            continue
        if below is not None and st.S_ISDIR(below.st_mode):
            _deleted(old, name, path, below, changes)
            below = None
        kind, mode = _kind(info.st_mode), st.S_IMODE(info.st_mode)
        if below is None:
            changes.add(LayerChange(path, "created", kind, mode, info.st_size, path))
        elif kind == "symlink" and st.S_ISLNK(below.st_mode):
            if os.readlink(name, dir_fd=new) != os.readlink(name, dir_fd=old):
                changes.add(LayerChange(path, "modified", kind, mode, info.st_size, path))
        elif kind != "file" or not _same_file(new, old, name, info, below):
            changes.add(LayerChange(path, "modified", kind, mode, info.st_size, path))
