"""What a workspace holds, recorded without following links: before and after a command."""

from __future__ import annotations

import os
import stat as st
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from sessions_app.agent.safefs import DIR_FLAGS, READ_FLAGS
from sessions_app.agent.workspace import RuleRefused

# What git in the root .git would run programs from (or be pointed elsewhere by).
# What git in the root .git would run programs from (or be pointed elsewhere by).
GIT_WATCHED_FILES = frozenset(
    {".git/config", ".git/commondir", ".git/info/attributes", ".git/objects/info/alternates"}
)
GIT_WATCHED_DIRS = frozenset(
    {".git", ".git/hooks", ".git/info", ".git/objects", ".git/objects/info"}
)
TEXT_LIMIT = 1 << 20  # pending-change text beyond this is summarised, not diffed


@dataclass(frozen=True)
class Entry:
    """One workspace entry as ``lstat`` saw it; ``content`` for regular files when captured."""

    kind: str  # file | dir | symlink | other
    mode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    nlink: int
    target: str = ""  # a symbolic link's text
    content: bytes | None = None

    def signature(self) -> tuple[object, ...]:
        """What changes when anything about the entry changes (ctime: even a reset mtime)."""
        return (self.kind, self.mode, self.size, self.mtime_ns, self.ctime_ns, self.ino,
                self.nlink, self.target)  # fmt: skip


@dataclass
class Snapshot:
    """Every entry of a workspace by relative path (the root ``.git`` only where watched)."""

    entries: dict[str, Entry]
    with_content: bool
    files: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class SnapshotLimits:
    """How much of a workspace a command's write check may hold (files, content bytes)."""

    max_entries: int = 50_000
    max_bytes: int = 256 << 20

    @classmethod
    def from_env(cls) -> SnapshotLimits:
        """``ACODE_COMMAND_SNAPSHOT_FILES`` / ``_BYTES``, read at call time."""
        return cls(
            _env_int("ACODE_COMMAND_SNAPSHOT_FILES", cls.max_entries),
            _env_int("ACODE_COMMAND_SNAPSHOT_BYTES", cls.max_bytes),
        )


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, not {raw!r}") from None


def workspace_snapshot(
    root: Path, *, content: bool, limits: SnapshotLimits | None = None
) -> Snapshot:
    """Every entry under ``root`` (links not followed), with file content when ``content``.

    Raises ``RuleRefused`` (rule ``snapshot``) when the workspace is over the limits: the
    command is then not run, rather than run without its writes being checked.
    """
    limits = limits or SnapshotLimits.from_env()
    snap = Snapshot({}, content)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _scan_tree(fd, "", snap, limits)
    finally:
        os.close(fd)
    return snap


def _watched(path: str) -> bool:
    """Whether a path at or under the root ``.git`` is part of a snapshot."""
    if not (path == ".git" or path.startswith(".git/")):
        return True
    return path in GIT_WATCHED_FILES or path in GIT_WATCHED_DIRS or path.startswith(".git/hooks/")


def _scan_tree(top: int, prefix: str, snap: Snapshot, limits: SnapshotLimits) -> None:
    stack = [(os.dup(top), prefix)]
    try:
        while stack:
            fd, base = stack.pop()
            try:
                with os.scandir(fd) as it:
                    names = sorted(e.name for e in it)
                for name in names:
                    path = f"{base}/{name}" if base else name
                    if not _watched(path):
                        continue
                    snap.files += 1
                    if snap.files > limits.max_entries:
                        raise _too_large(limits)
                    budget = limits.max_bytes - snap.bytes
                    entry = _entry(fd, name, with_content=snap.with_content, budget=budget)
                    if entry is None:
                        continue  # vanished meanwhile
                    snap.entries[path] = entry
                    snap.bytes += len(entry.content or b"")
                    if snap.bytes > limits.max_bytes:
                        raise _too_large(limits)
                    if entry.kind == "dir":
                        with suppress(OSError):
                            stack.append((os.open(name, DIR_FLAGS, dir_fd=fd), path))
            finally:
                os.close(fd)
    finally:
        for fd, _ in stack:
            os.close(fd)


_KINDS = {st.S_IFDIR: "dir", st.S_IFLNK: "symlink", st.S_IFREG: "file"}


def _too_large(limits: SnapshotLimits) -> RuleRefused:
    return RuleRefused(
        f"the workspace is too large to check what a command writes (over "
        f"{limits.max_entries} entries or {limits.max_bytes} bytes of files; "
        "ACODE_COMMAND_SNAPSHOT_FILES / _BYTES): the command was not run",
        "snapshot",
    )


def _entry(dir_fd: int, name: str, *, with_content: bool, budget: int) -> Entry | None:
    """The entry ``name`` in ``dir_fd`` (a link itself, never its target), with the content
    of a regular file when asked (at most ``budget`` bytes and one more)."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    mode = info.st_mode
    kind = _KINDS.get(st.S_IFMT(mode), "other")
    target, data = "", None
    if kind == "symlink":
        with suppress(OSError):
            target = os.readlink(name, dir_fd=dir_fd)
    elif kind == "file" and with_content:
        data = read_all(dir_fd, name, info, budget)  # over the budget: one byte more
    return Entry(
        kind=kind,
        mode=st.S_IMODE(mode),
        size=info.st_size,
        mtime_ns=info.st_mtime_ns,
        ctime_ns=info.st_ctime_ns,
        ino=info.st_ino,
        nlink=info.st_nlink,
        target=target,
        content=data,
    )


def read_all(dir_fd: int, name: str, info: os.stat_result, limit: int) -> bytes | None:
    """The file's bytes, if it is still the file ``info`` describes; at most ``limit + 1``."""
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_ino != info.st_ino:
            return None  # replaced between lstat and open
        os.set_blocking(fd, True)
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
