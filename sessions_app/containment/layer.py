"""The copy-on-write layer a command writes to, and a session's layer beneath it.

A write-capable command sees its workspace through an overlay: reads come from the
workspace (the lowest layer) and the session's layer above it, every write lands in an
upper directory in server state (``ACODE_LAYERS_ROOT``). The workspace itself never
changes while a command runs, so nothing a command does can race the check. When the call
has ended and all its processes are dead, ``layerscan`` reads the upper directory without
following links and says what the command changed; ``writes`` applies what the role may
write, ``sessionlayer`` keeps what the repository ignores, and the layer is removed with
everything else in it.

Under ``ACODE_SANDBOX=off`` (development only) there is no overlay: the command runs in a
copy of the workspace, which ``layerscan.copy_changes`` compares with the workspace.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat as st
from dataclasses import dataclass
from pathlib import Path

# writes.py reads the files of a layer through these, by this module's name.
from sessions_app.containment.nofollow import opened_path as opened_path
from sessions_app.containment.nofollow import read_head as read_head
from sessions_app.containment.safefs import DIR_FLAGS

__all__ = ["Layer", "copy_workspace", "layer_create", "opened_path", "read_head", "remove_tree"]


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
        """Delete the layer and everything the command left in it (at any depth)."""
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
    """``rm -rf`` at any depth, without following links, that also removes what overlayfs
    leaves unreadable (its work directory) and what a command made unreadable.

    Iterative, holding one directory open at a time (it climbs back with ``..``): neither
    the tree's depth nor its path length can make it fail half way."""
    try:
        parent = os.open(Path(path).parent, DIR_FLAGS)
    except FileNotFoundError:
        return
    try:
        remove_at(parent, Path(path).name)
    finally:
        os.close(parent)


def remove_at(parent: int, name: str) -> None:
    """``remove_tree`` of the entry ``name`` in the opened directory ``parent`` (a link is
    removed, never followed; nothing there: nothing to do)."""
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not st.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=parent)
        return
    fd = _open_fixing(os.dup(parent), name, close_parent=True)
    names: list[str] = []  # the directories below ``name`` that ``fd`` is in
    while True:
        inner = _clear_files(fd)
        if inner is not None:
            fd = _open_fixing(fd, inner, close_parent=True)
            names.append(inner)
            continue
        if not names:
            os.close(fd)
            os.rmdir(name, dir_fd=parent)
            return
        # Climb back with "..": a tree of the server's own, that nothing else changes now.
        up = os.open("..", DIR_FLAGS, dir_fd=fd)
        os.close(fd)
        fd = up
        os.rmdir(names.pop(), dir_fd=fd)


def _open_fixing(parent: int, name: str, *, close_parent: bool) -> int:
    """Open the directory ``name`` under ``parent``, making it readable if it is not."""
    try:
        try:
            return os.open(name, DIR_FLAGS, dir_fd=parent)
        except PermissionError:
            os.chmod(name, 0o700, dir_fd=parent, follow_symlinks=False)
            return os.open(name, DIR_FLAGS, dir_fd=parent)
    finally:
        if close_parent:
            os.close(parent)


def _clear_files(fd: int) -> str | None:
    """Unlink every non-directory in the opened directory; the name of a subdirectory left
    in it (None when it is empty now)."""
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o700)  # entries of a directory without write permission stay
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                return entry.name
            try:
                os.unlink(entry.name, dir_fd=fd)
            except FileNotFoundError:
                continue
            except OSError as exc:  # pragma: no cover - a file we own always unlinks
                if exc.errno != errno.EISDIR:
                    raise
                return entry.name
    return None


def copy_workspace(workspace: Path, layer: Layer) -> Path:
    """A copy of the workspace for a command run without a sandbox (development only)."""
    shutil.copytree(workspace, layer.copy, symlinks=True)
    return layer.copy
