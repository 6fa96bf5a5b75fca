"""What a command left in its layer, read without following links, at any depth.

``layer_changes`` walks a command's upper directory (``copy_changes``: the workspace copy
a command ran in without a sandbox) against the workspace, once every process of the
command is dead, and says what it changed: files created or modified (with their mode),
entries deleted (the kernel's whiteouts, directories the kernel made opaque or that were
replaced), and entries of kinds a workspace may not gain (links, devices, FIFOs, sockets).

- **Only the kernel says what is deleted.** Overlay attributes are read only in the
  namespace the kernel used for this mount (``user.overlay.`` for an overlay in a user
  namespace), and trusted only where a command cannot set them itself (Linux 6.7+ escapes
  them; before, an opaque directory refuses its subtree). A redirect refuses its subtree.
- **Nothing is skipped silently**: a directory the server cannot open, a path longer than
  git or the tools allow, is refused with its rule (and everything that depends on it).
- **Bounded**: every entry counts against the layer's budget (bytes by apparent size, so
  sparse files count whole, and entries); past it, ``LayerOverBudget`` and nothing applies.
- **Any depth**: the walk is iterative and holds one directory per level.
- **What stands or falls together** shares a ``group``: a directory replaced by a file (or
  the reverse, or emptied and filled again) and everything its replacement deleted or
  created; ``writes`` refuses a group whole when it refuses one of its changes.
- **Ignored paths** (``ignored``: git's ignore rules, ``sessionlayer``) are listed, not
  changed: they stay in the session's layer.
"""

from __future__ import annotations

import os
import stat as st
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sessions_app.containment.layer import Layer

# What a scan reports; imported from here by name.
from sessions_app.containment.layerreport import LayerChange as LayerChange
from sessions_app.containment.layerreport import LayerLimits as LayerLimits
from sessions_app.containment.layerreport import LayerOverBudget as LayerOverBudget
from sessions_app.containment.layerreport import LayerScan as LayerScan
from sessions_app.containment.layerreport import (
    kernel_guards_overlay_xattrs as kernel_guards_overlay_xattrs,
)
from sessions_app.containment.nofollow import entry_names, lstat_at, open_dir, opened_file
from sessions_app.containment.safefs import DIR_FLAGS

COMPARE_CHUNK = 1 << 20


Ignored = Callable[[str, bool], bool]
APPLY, KEEP, COUNT = "apply", "keep", "count"  # compare; ignored (vet); refused (count only)


@dataclass
class _Frame:
    """One directory of the walk: its fds (upper, workspace), what it is, what is left."""

    upper: int
    lower: int
    prefix: str
    group: str
    mode: str
    names: list[str]
    new: bool = False  # made by the command (reported when it stays empty)
    seen: int = 0  # changes when entered


def layer_changes(
    layer: Layer, workspace: Path, *, limits: LayerLimits, ignored: Ignored | None = None
) -> LayerScan:
    """What the command whose writes are in ``layer`` changed in ``workspace``."""
    return _Walk(limits, ignored, copy=False).run(layer.upper, workspace)


def copy_changes(
    layer: Layer, workspace: Path, *, limits: LayerLimits, ignored: Ignored | None = None
) -> LayerScan:
    """What a command changed in the copy ``copy_workspace`` made, against ``workspace``."""
    return _Walk(limits, ignored, copy=True).run(layer.copy, workspace)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def _kind(mode: int) -> str:
    if st.S_ISREG(mode):
        return "file"
    if st.S_ISDIR(mode):
        return "dir"
    if st.S_ISLNK(mode):
        return "symlink"
    return "other"


def _is_whiteout(info: os.stat_result) -> bool:
    return st.S_ISCHR(info.st_mode) and info.st_rdev == 0


class _Walk:
    def __init__(self, limits: LayerLimits, ignored: Ignored | None, *, copy: bool) -> None:
        self.limits, self.ignored, self.copy = limits, ignored, copy
        self.scan = LayerScan()
        self.by_path: dict[str, LayerChange] = {}
        self.events = 0  # changes, refusals and ignored paths so far (empty directories)

    def run(self, top: Path, workspace: Path) -> LayerScan:
        upper = os.open(top, DIR_FLAGS)
        lower = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        stack = [_Frame(upper, lower, "", "", APPLY, self._names(upper, lower, ""))]
        try:
            while stack:
                frame = stack[-1]
                if not frame.names:
                    self._leave(stack.pop())
                    continue
                child = self._entry(frame, frame.names.pop())
                if child is not None:
                    child.seen = self.events
                    stack.append(child)
        finally:
            for frame in stack:
                self._close(frame)
        return self._result()

    def _names(self, upper: int, lower: int, prefix: str) -> list[str]:
        """The directory's names, last first (popped in order); a copy's deletions first."""
        names = entry_names(upper)
        if self.copy and lower >= 0:
            for gone in sorted(set(entry_names(lower)) - set(names)):
                below = lstat_at(lower, gone)
                if below is not None:
                    self._deleted(lower, gone, _join(prefix, gone), below, "")
        return names[::-1]

    def _count(self, info: os.stat_result, path: str) -> None:
        self.scan.entries += 1
        if st.S_ISREG(info.st_mode):
            self.scan.bytes += info.st_size
        limits = self.limits
        if self.scan.entries > limits.max_entries:
            raise LayerOverBudget("entries", self.scan.entries, limits.max_entries)
        if self.scan.bytes > limits.max_bytes:
            raise LayerOverBudget("bytes", self.scan.bytes, limits.max_bytes)

    def _refuse(self, path: str, change: str, rule: str, group: str, problem: str = "") -> None:
        self.events += 1
        self.scan.refused.append(
            {"path": path, "change": change, "rule": rule, "group": group or path,
             **({"problem": problem} if problem else {})}
        )  # fmt: skip

    def _entry(self, frame: _Frame, name: str) -> _Frame | None:
        path = _join(frame.prefix, name)
        info = os.stat(name, dir_fd=frame.upper, follow_symlinks=False)
        below = lstat_at(frame.lower, name)
        if self.copy and below is not None and _unchanged(frame, name, info, below):
            return None  # the copy's own files cost nothing
        self._count(info, path)
        is_dir = st.S_ISDIR(info.st_mode)
        if frame.mode == COUNT:
            return self._descend(frame, name, path, -1, frame.group, COUNT) if is_dir else None
        if frame.mode == KEEP:
            self._vet_kept(path, info)
            return self._descend(frame, name, path, -1, "", KEEP) if is_dir else None
        if len(path.encode("utf-8", "surrogateescape")) > self.limits.max_path:
            self._refuse(path, "created", "path_length", frame.group, "the path is too long")
            return (
                self._descend(frame, name, path, -1, frame.group or path, COUNT) if is_dir else None
            )
        whiteout = not self.copy and _is_whiteout(info)
        if whiteout:  # ignored as what it deletes would be
            is_dir = below is not None and st.S_ISDIR(below.st_mode)
        if self.ignored is not None and self.ignored(path, is_dir):
            self.scan.ignored.append(path)  # kept (a whiteout too: deleted for the session)
            self.events += 1
            return (
                self._descend(frame, name, path, -1, "", KEEP) if is_dir and not whiteout else None
            )
        if whiteout:
            if below is not None:
                self._deleted(frame.lower, name, path, below, frame.group)
            return None
        if is_dir:
            return self._directory(frame, name, path, info, below)
        self._file(frame, name, path, info, below)
        return None

    def _vet_kept(self, path: str, info: os.stat_result) -> None:
        """What an ignored path may hold in the session layer: no special files or bits,
        no git metadata."""
        kind, name = _kind(info.st_mode), path.rsplit("/", 1)[-1]
        rule = ""
        if name.lower() == ".git":
            rule = "git_dir"
        elif kind == "other" and not _is_whiteout(info):
            rule = "file_kind"
        elif st.S_IMODE(info.st_mode) & 0o7000 and kind != "symlink":
            rule = "file_mode"
        if rule:
            self.scan.scrub.append(path)
            self._refuse(path, "created", rule, "")

    def _descend(
        self, frame: _Frame, name: str, path: str, lower: int, group: str, mode: str
    ) -> _Frame | None:
        upper = open_dir(frame.upper, name)
        if upper < 0:
            if lower >= 0:
                os.close(lower)
            if mode != COUNT:
                self._refuse(path, "created", "unreadable", group, "the server cannot open it")
            return None
        try:
            names = self._names(upper, lower, path) if mode != COUNT else entry_names(upper)
        except OSError:
            os.close(upper)
            if lower >= 0:
                os.close(lower)
            self._refuse(path, "created", "unreadable", group, "the server cannot list it")
            return None
        return _Frame(upper, lower, path, group, mode, names)

    def _directory(
        self,
        frame: _Frame,
        name: str,
        path: str,
        info: os.stat_result,
        below: os.stat_result | None,
    ) -> _Frame | None:
        below_dir = below is not None and st.S_ISDIR(below.st_mode)
        group = frame.group
        problem, opaque = self._overlay_attributes(frame.upper, name)
        if problem:
            self._refuse(path, "modified", "overlay_attribute", group, problem)
            return self._descend(frame, name, path, -1, group or path, COUNT)
        if below is not None and not below_dir:  # a file or link replaced by a directory
            group = group or path
            self._deleted(frame.lower, name, path, below, group)
        elif below is not None and below_dir and opaque:  # emptied, then filled again
            group = group or path
            self._deleted(frame.lower, name, path, below, group)
            below_dir = False
        mode = st.S_IMODE(info.st_mode)
        if mode & 0o7000:
            self._add(LayerChange(path, "modified", "dir", mode, group=group))
        lower = open_dir(frame.lower, name) if below_dir else -1
        child = self._descend(frame, name, path, lower, group, APPLY)
        if child is not None:
            child.new = below is None or not below_dir
        return child

    def _overlay_attributes(self, upper: int, name: str) -> tuple[str, bool]:
        """(why the directory's overlay attributes refuse it, whether the kernel made it
        opaque); only the kernel's namespace for this mount is read."""
        if self.copy:
            return "", False
        prefix, fd = self.limits.prefix, open_dir(upper, name)
        if fd < 0:
            return "", False
        try:
            names = set(os.listxattr(fd))
            if prefix + "redirect" in names:
                return "a renamed directory (overlay redirect) is not applied", False
            opaque = prefix + "opaque" in names and os.getxattr(fd, prefix + "opaque") == b"y"
        except OSError:
            return "", False
        finally:
            os.close(fd)
        if opaque and not self.limits.guarded:
            return "this kernel lets a command mark a directory opaque itself", False
        return "", opaque

    def _file(
        self,
        frame: _Frame,
        name: str,
        path: str,
        info: os.stat_result,
        below: os.stat_result | None,
    ) -> None:
        group = frame.group
        if below is not None and st.S_ISDIR(below.st_mode):  # a directory replaced
            group = group or path
            self._deleted(frame.lower, name, path, below, group)
            below = None
        kind, mode = _kind(info.st_mode), st.S_IMODE(info.st_mode)
        if below is None:
            self._add(LayerChange(path, "created", kind, mode, info.st_size, path, group))
        elif kind == "symlink" and st.S_ISLNK(below.st_mode):
            if os.readlink(name, dir_fd=frame.upper) != os.readlink(name, dir_fd=frame.lower):
                self._add(LayerChange(path, "modified", kind, mode, info.st_size, path, group))
        elif kind != "file" or not _same_file(frame.upper, frame.lower, name, info, below):
            self._add(LayerChange(path, "modified", kind, mode, info.st_size, path, group))

    def _deleted(self, lower: int, name: str, path: str, below: os.stat_result, group: str) -> None:
        """``path`` (and, for a directory, everything under it) no longer exists; deepest
        first, without recursion."""
        if not st.S_ISDIR(below.st_mode) or name.lower() == ".git":  # .git: refused whole
            self._add(LayerChange(path, "deleted", _kind(below.st_mode), group=group))
            return
        group = group or path
        top = open_dir(lower, name)
        if top < 0:
            self._refuse(path, "deleted", "unreadable", group, "the server cannot open it")
            return
        stack = [(top, path, entry_names(top)[::-1])]  # one open directory per level
        while stack:
            fd, where, names = stack[-1]
            if not names:
                os.close(fd)
                stack.pop()
                self._add(LayerChange(where, "deleted", "dir", group=group))  # after its content
                continue
            child = names.pop()
            info = lstat_at(fd, child)
            if info is None:
                continue
            if st.S_ISDIR(info.st_mode) and child.lower() != ".git":
                inner = open_dir(fd, child)
                if inner < 0:
                    self._refuse(_join(where, child), "deleted", "unreadable", group)
                    continue
                stack.append((inner, _join(where, child), entry_names(inner)[::-1]))
            else:
                kind = _kind(info.st_mode)
                self._add(LayerChange(_join(where, child), "deleted", kind, group=group))

    def _add(self, change: LayerChange) -> None:
        """A later entry for a path overrides an earlier one (a file deleted with its
        directory and then written again is modified, not deleted)."""
        self.events += 1
        earlier = self.by_path.get(change.path)
        if earlier is not None and earlier.change == "deleted" and change.change == "created":
            change = LayerChange(change.path, "modified", change.kind, change.mode, change.size,
                                 change.source, change.group or earlier.group)  # fmt: skip
        self.by_path[change.path] = change

    def _leave(self, frame: _Frame) -> None:
        if frame.mode == APPLY and frame.new and frame.prefix and self.events == frame.seen:
            self.scan.empty_dirs.append(frame.prefix)
        self._close(frame)

    @staticmethod
    def _close(frame: _Frame) -> None:
        for fd in (frame.upper, frame.lower):
            if fd >= 0:
                os.close(fd)

    def _result(self) -> LayerScan:
        """Deletions deepest first, then everything else shallowest first."""
        values = self.by_path.values()
        gone = sorted((c for c in values if c.change == "deleted"),
                      key=lambda c: (-c.path.count("/"), c.path))  # fmt: skip
        rest = sorted((c for c in values if c.change != "deleted"),
                      key=lambda c: (c.path.count("/"), c.path))  # fmt: skip
        self.scan.changes = gone + rest
        return self.scan


def _unchanged(frame: _Frame, name: str, info: os.stat_result, below: os.stat_result) -> bool:
    """In a workspace copy: the same file as the workspace's (directories are walked)."""
    if st.S_ISDIR(info.st_mode) and st.S_ISDIR(below.st_mode):
        return False
    if st.S_ISLNK(info.st_mode) and st.S_ISLNK(below.st_mode):
        return os.readlink(name, dir_fd=frame.upper) == os.readlink(name, dir_fd=frame.lower)
    return st.S_ISREG(info.st_mode) and _same_file(frame.upper, frame.lower, name, info, below)


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
