"""The moves that put a command's recorded changes into the workspace: what applying does
once the changes are recorded, and what finishes an apply a dead worker left half done.
Each move is idempotent (a file already moved, or already deleted, is skipped)."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import time
from pathlib import Path
from typing import Any

from sessions_app.containment.layer import remove_tree
from sessions_app.containment.nofollow import open_dir, opened_file
from sessions_app.containment.paths import split_path
from sessions_app.containment.safefs import DIR_FLAGS, WorkspaceFS

STAGING_PREFIX = "applying-"


class DirCache:
    """Directories under one opened root, each opened once (without following links)."""

    def __init__(self, root: int) -> None:
        self.fds: dict[tuple[str, ...], int] = {(): root}

    def get(self, names: list[str]) -> int:
        """The directory ``names`` lead to (-1: not reachable that way)."""
        for depth in range(1, len(names) + 1):
            key = tuple(names[:depth])
            if key not in self.fds:
                parent = self.fds[key[:-1]]
                self.fds[key] = open_dir(parent, key[-1]) if parent >= 0 else -1
        return self.fds[tuple(names)]

    def close(self) -> None:
        for fd in self.fds.values():
            if fd >= 0:
                os.close(fd)


def apply_resume(root: Path, plan: dict[str, Any]) -> None:
    """Make the moves of ``plan`` that are not made yet (each is idempotent), remove the
    staging directory and sync: what applying does after recording, and what finishes an
    apply a dead worker left half done."""
    staging = Path(root) / str(plan["staging"])  # absolute: beside the command's layer
    with WorkspaceFS(root) as fs:
        try:
            sources = DirCache(os.open(staging, DIR_FLAGS))
        except FileNotFoundError:
            sources = DirCache(-1)
        parents: dict[tuple[str, ...], int] = {}  # opened once each (puts come last)
        try:
            for op in plan["ops"]:
                if op[0] == "delete":
                    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                        fs.delete(op[1])
                elif op[0] == "rmdir":
                    fs.remove_empty_dir(op[1])
                else:
                    _put(fs, sources, parents, op, replaces=bool(op[4:] and op[4]))
        finally:
            sources.close()
            for fd in parents.values():
                os.close(fd)
        _sync(fs)
    if staging.exists():
        remove_tree(staging)


def _put(
    fs: WorkspaceFS, sources: DirCache, parents: dict[tuple[str, ...], int], op: list[Any],
    *, replaces: bool,
) -> None:  # fmt: skip
    """Move the staged file ``op[1]`` to ``op[2]`` (gone: moved already)."""
    staged, rel, mode = op[1], op[2], op[3]
    *where, name = staged.split("/")
    source = sources.get(where)
    if source < 0:
        return
    *dirs, last = split_path(rel)
    if replaces:
        fs.remove_empty_dir(rel)  # a directory the command replaced, emptied by now
    key = tuple(dirs)
    if key not in parents:
        with fs.directory(dirs, create=True) as opened:
            parents[key] = os.dup(opened)
    try:
        os.rename(name, last, src_dir_fd=source, dst_dir_fd=parents[key])
    except FileNotFoundError:  # moved already (by an earlier try, or another resume)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:  # a mount inside an attached directory
            raise
        with opened_file(source, name) as fd:
            fs.write_from(rel, fd, mode=mode)
        os.unlink(name, dir_fd=source)


def staging_leftovers(root: Path, keep: set[str], *, older_than: float = 0.0) -> None:
    """Remove staging directories no journal names, last changed more than
    ``older_than`` seconds ago (a worker died before recording)."""
    now = time.time()
    with os.scandir(root) as entries:
        stale = [
            e.name for e in entries
            if e.name.startswith(STAGING_PREFIX) and e.name not in keep
            and now - e.stat(follow_symlinks=False).st_mtime >= older_than
        ]  # fmt: skip
    for name in stale:
        remove_tree(Path(root) / name)


_libc = ctypes.CDLL(None, use_errno=True)


def _sync(fs: WorkspaceFS) -> None:
    """One sync of the workspace's filesystem for all the renames (not one per file)."""
    with fs.directory([]) as fd:
        if _libc.syncfs(fd) != 0:  # pragma: no cover - syncfs of an open fd does not fail
            os.sync()
