"""Files and directories read through descriptors, never through a link.

Every directory is opened with ``O_NOFOLLOW`` under its parent's descriptor, and only
regular files are ever opened for reading (never a FIFO or a device), so a command's
links cannot point a read at anything of the server's. The copy-on-write layer's change
walk reads a command's tree this way, and the server reads the files it applies from it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as st
from collections.abc import Iterator
from pathlib import Path

from sessions_app.containment.safefs import DIR_FLAGS, READ_FLAGS


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """``name`` under ``dir_fd`` as it is (a link not followed), or None."""
    if dir_fd < 0:
        return None
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None


def open_dir(dir_fd: int, name: str) -> int:
    """The directory ``name`` under ``dir_fd`` (never through a link), or -1."""
    if dir_fd < 0:
        return -1
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return -1


def entry_names(dir_fd: int) -> list[str]:
    """The names in a directory, sorted."""
    with os.scandir(dir_fd) as entries:
        return sorted(e.name for e in entries)


@contextlib.contextmanager
def opened_file(dir_fd: int, name: str) -> Iterator[int]:
    """A regular file under ``dir_fd`` opened for reading without following a link (-1 if
    it is not one); never opens a FIFO or device."""
    fd = -1
    if dir_fd >= 0:
        with contextlib.suppress(OSError):
            fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
            if not st.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                fd = -1
            else:
                os.set_blocking(fd, True)
    try:
        yield fd
    finally:
        if fd >= 0:
            os.close(fd)


@contextlib.contextmanager
def opened_path(root: Path, rel: str) -> Iterator[int]:
    """A regular file at ``rel`` under ``root``, every component opened without following
    links (-1 when it is not reachable that way or not a regular file)."""
    *dirs, name = rel.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in dirs:
            child = open_dir(fd, part)
            os.close(fd)
            fd = child
            if fd < 0:
                break
        with opened_file(fd, name) as file_fd:
            yield file_fd
    finally:
        if fd >= 0:
            os.close(fd)


def read_head(fd: int, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes from the start of an opened file (one more: "too big")."""
    os.lseek(fd, 0, os.SEEK_SET)
    chunks, left = [], limit + 1
    while left > 0:
        try:
            chunk = os.read(fd, min(left, 1 << 20))
        except OSError as exc:  # pragma: no cover - a regular file read does not fail so
            if exc.errno == errno.EINTR:
                continue
            raise
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
