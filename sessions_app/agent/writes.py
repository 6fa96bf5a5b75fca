"""What a command wrote: detected, recorded when the role may write it, otherwise undone.

A command is write-capable, so ``workspace_snapshot`` records the workspace before it runs
(every entry, read by directory fd without following links, and the content of regular
files, within limits) and ``command_writes_settle`` compares afterwards: changes the role
may make are returned to be recorded as pending changes; every other change is undone
through directory fds and returned as a denial naming the rule that decided. The root
``.git`` is watched only where git would run programs from it (config, hooks,
alternates); changes there are always undone.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat as st
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from roles.access import path_allowed
from sessions_app.agent.safefs import DIR_FLAGS, TMP_FLAGS
from sessions_app.agent.snapshot import (
    TEXT_LIMIT,
    Entry,
    Snapshot,
    SnapshotLimits,
    read_all,
    workspace_snapshot,
)
from sessions_app.agent.workspace import is_binary


@dataclass(frozen=True)
class WriteChange:
    """A change a command made that the role may make: recorded as a pending change."""

    path: str
    before: str | None
    after: str | None


@dataclass
class CommandWrites:
    """What a command changed: allowed changes to record, and denied ones (undone)."""

    allowed: list[WriteChange] = field(default_factory=list)
    denied: list[dict[str, str]] = field(default_factory=list)  # path, change, rule, [problem]


def command_writes_settle(
    root: Path, before: Snapshot, *, may_write: bool, write_paths: Sequence[str]
) -> CommandWrites:
    """Compare the workspace with ``before``; undo every change the role may not make.

    A change is allowed when the role may write, the path matches its ``write_paths`` and
    what is left is a regular single-link file (a command may not leave links or special
    files: rule ``file_kind``). ``.git`` (watched files, or a nested ``.git``) is never
    allowed (rule ``git_dir``); without a write permission nothing is (``write_permission``).
    """
    after = workspace_snapshot(root, content=False, limits=SnapshotLimits(10**9, 10**12))
    result = CommandWrites()
    changed = _changed_paths(before, after)
    if not changed:
        return result
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        undo: list[tuple[str, str, str]] = []  # path, change, rule
        for path in changed:
            old, new = before.entries.get(path), after.entries.get(path)
            old_entry = old if old is not None and old.kind != "dir" else None
            new_entry = new if new is not None and new.kind != "dir" else None
            if old_entry is None and new_entry is None:
                continue  # directories: restored or removed after the files
            now = None
            if new_entry is not None and new_entry.kind == "file":
                known = len(old_entry.content or b"") if old_entry is not None else 0
                if new_entry.size <= max(TEXT_LIMIT, known):  # bigger: shown as a size only
                    now = _read_current(fd, path, max(TEXT_LIMIT, known))
            if _only_touched(old_entry, new_entry, now):
                continue
            change = (
                "created" if old_entry is None else "deleted" if new_entry is None else "modified"
            )
            rule = _rule_for(path, new_entry, may_write=may_write, write_paths=write_paths)
            if rule:
                undo.append((path, change, rule))
                continue
            before_text = (
                _text(old_entry.content) if old_entry and old_entry.kind == "file" else None
            )
            after_text = None
            if new_entry is not None:  # a regular file: anything else was refused above
                after_text = (
                    _text(now) if now is not None else f"[large file: {new_entry.size} bytes]\n"
                )
            if before_text is not None or after_text is not None:
                result.allowed.append(WriteChange(path, before_text, after_text))
        result.denied = _undo(fd, before, after, undo, may_write, write_paths)
    finally:
        os.close(fd)
    return result


def _changed_paths(before: Snapshot, after: Snapshot) -> list[str]:
    paths = set(before.entries) | set(after.entries)
    out = []
    for path in paths:
        old, new = before.entries.get(path), after.entries.get(path)
        if old is None or new is None:
            out.append(path)
        elif old.kind == new.kind == "dir":
            if old.mode != new.mode:  # a directory's own times change with its entries
                out.append(path)
        elif old.signature() != new.signature():
            out.append(path)
    return sorted(out, key=lambda p: (-p.count("/"), p))  # deepest first


def _only_touched(old: Entry | None, new: Entry | None, now: bytes | None) -> bool:
    """A file whose times or links changed but not its content or mode."""
    if old is None or new is None or not old.kind == new.kind == "file":
        return False
    return old.content is not None and now == old.content and old.mode == new.mode


def _rule_for(path: str, new: Entry | None, *, may_write: bool, write_paths: Sequence[str]) -> str:
    """The rule that forbids this change, or "" when the role may make it."""
    parts = path.split("/")
    if any(p.lower() == ".git" for p in parts):
        return "git_dir"
    if not may_write:
        return "write_permission"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "file_name"
    if not path_allowed(path, write_paths):
        return "write_paths"
    if new is not None and (new.kind != "file" or new.nlink > 1):
        return "file_kind"
    return ""


def _read_current(root_fd: int, path: str, limit: int) -> bytes | None:
    with _opened_parent(root_fd, path) as (parent, name):
        if parent < 0:
            return None
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except OSError:
            return None
        return read_all(parent, name, info, limit) if st.S_ISREG(info.st_mode) else None


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    if len(data) > TEXT_LIMIT or is_binary(data):
        return f"[binary or large file: {len(data)} bytes]\n"
    return data.decode("utf-8", "replace")


@contextmanager
def _opened_parent(root_fd: int, path: str, *, create: bool = False) -> Iterator[tuple[int, str]]:
    """(fd of the path's directory, last name), each step opened without following links.

    With ``create``, missing directories are made and a non-directory in the way (a link or
    file a command put where a directory was) is removed. (-1, name) when not reachable.
    """
    *dirs, name = path.split("/")
    fd = os.dup(root_fd)
    try:
        for part in dirs:
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError:
                if not create:
                    os.close(fd)
                    fd = -1
                    break
                with suppress(FileNotFoundError):
                    os.unlink(part, dir_fd=fd)  # a link or file where a directory was
                with suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        yield fd, name
    finally:
        if fd >= 0:
            os.close(fd)


def _undo(
    root_fd: int,
    before: Snapshot,
    after: Snapshot,
    undo: list[tuple[str, str, str]],
    may_write: bool,
    write_paths: Sequence[str],
) -> list[dict[str, str]]:
    """Remove what a command put where it may not, restore what was there; report each."""
    denied: list[dict[str, str]] = []
    # 1. Remove what is there now (deepest first); 2. restore (shallowest first).
    for path, _change, _rule in undo:
        new = after.entries.get(path)
        if new is not None and new.kind != "dir":
            with _opened_parent(root_fd, path) as (parent, name), suppress(FileNotFoundError):
                if parent >= 0:
                    os.unlink(name, dir_fd=parent)
    for path, change, rule in sorted(undo, key=lambda u: (u[0].count("/"), u[0])):
        item = {"path": path, "change": change, "rule": rule}
        old = before.entries.get(path)
        if old is not None and old.kind != "dir":
            problem = _restore(root_fd, path, old)
            if problem:
                item["problem"] = problem
        denied.append(item)
    _restore_dirs(root_fd, before, after, may_write, write_paths)
    _remove_created_dirs(root_fd, before, after, may_write, write_paths)
    return denied


def _restore(root_fd: int, path: str, old: Entry) -> str:
    """Put back ``old`` at ``path``; a problem text when it cannot be."""
    if old.kind == "symlink":
        with _opened_parent(root_fd, path, create=True) as (parent, name):
            os.symlink(old.target, name, dir_fd=parent)
        return ""
    if old.kind != "file" or old.content is None:
        return "not restorable (its content was not recorded)"
    with _opened_parent(root_fd, path, create=True) as (parent, name):
        info = _lstat(parent, name)
        if info is not None and st.S_ISDIR(info.st_mode):
            shutil.rmtree(name, dir_fd=parent)  # fd-based: never follows a link inside
        tmp = f".acode-restore-{secrets.token_hex(8)}"
        fd = os.open(tmp, TMP_FLAGS, 0o600, dir_fd=parent)
        try:
            try:
                view = memoryview(old.content)
                while view:
                    view = view[os.write(fd, view[: 1 << 16]) :]
                os.fchmod(fd, old.mode)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise
    return ""


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None


def _restore_dirs(
    root_fd: int, before: Snapshot, after: Snapshot, may_write: bool, write_paths: Sequence[str]
) -> None:
    """Directories removed (or their mode changed) where the role could not change files
    come back as they were, even if empty."""
    for path in sorted(before.entries, key=lambda p: (p.count("/"), p)):
        old = before.entries[path]
        new = after.entries.get(path)
        if old.kind != "dir" or (new is not None and new.kind == "dir" and new.mode == old.mode):
            continue
        if not _rule_for(f"{path}/x", None, may_write=may_write, write_paths=write_paths):
            continue
        with _opened_parent(root_fd, path, create=True) as (parent, name):
            with suppress(FileExistsError):
                os.mkdir(name, old.mode, dir_fd=parent)
            info = _lstat(parent, name)
            if info is not None and st.S_ISDIR(info.st_mode):  # never chmod through a link
                os.chmod(name, old.mode, dir_fd=parent)


def _remove_created_dirs(
    root_fd: int, before: Snapshot, after: Snapshot, may_write: bool, write_paths: Sequence[str]
) -> None:
    """Empty directories a command created where the role could not put a file go away."""
    was_dir = {p for p, e in before.entries.items() if e.kind == "dir"}
    created = [p for p, e in after.entries.items() if e.kind == "dir" and p not in was_dir]
    for path in sorted(created, key=lambda p: (-p.count("/"), p)):
        if (
            may_write
            and _rule_for(f"{path}/x", None, may_write=True, write_paths=write_paths) == ""
        ):
            continue
        with _opened_parent(root_fd, path) as (parent, name), suppress(OSError):
            if parent >= 0:
                os.rmdir(name, dir_fd=parent)  # only when empty
