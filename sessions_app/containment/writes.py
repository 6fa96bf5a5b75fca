"""The one way the server writes a workspace.

``WorkspaceWriter`` is the only code that changes a workspace: it stores the exact bytes in
the content store, replaces the file atomically through directory fds (``safefs``), keeps
the secret-file index true, and returns what to record as a pending change. A command's
layer is applied through it as one unit (``applying``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from roles.writes import CONTROL
from sessions_app.containment.content import ContentStore
from sessions_app.containment.nofollow import read_head
from sessions_app.containment.safefs import Refused, WorkspaceFS
from sessions_app.containment.secretfiles import SecretIndex
from sessions_app.containment.workspace import is_binary

TEXT_LIMIT = 1 << 20  # pending-change text beyond this is summarised, not diffed
EDIT_CAP = 4 << 20  # the text of a file being replaced or deleted, for its pending diff
GIT_FILE, GIT_EXECUTABLE = 0o100644, 0o100755


@dataclass(frozen=True)
class RecordedWrite:
    """A change the server made: the text for its diff and the exact content written.

    ``content`` is the git blob id of the bytes now at ``path`` ("" when it was deleted),
    ``mode`` their git file mode (0 when deleted); ``before_content`` and ``before_mode``
    the same of what was there before ("" and 0: nothing was).
    """

    path: str
    before: str | None
    after: str | None
    content: str
    mode: int
    before_content: str = ""
    before_mode: int = 0


def as_text(data: bytes) -> str:
    """A file's bytes as diff text, or a placeholder for binary or very large content."""
    if len(data) > TEXT_LIMIT or is_binary(data):
        return f"[binary or large file: {len(data)} bytes]\n"
    return data.decode("utf-8", "replace")


def git_mode(permissions: int) -> int:
    """The git mode of a regular file with these permission bits."""
    return GIT_EXECUTABLE if permissions & 0o111 else GIT_FILE


@dataclass(frozen=True)
class Before:
    """What a path held before a change: diff text (None: nothing), blob id and git mode."""

    text: str | None = None
    content: str = ""
    mode: int = 0


class WorkspaceWriter:
    """The one way the server changes a workspace's files (see the module docstring)."""

    def __init__(self, root: Path, store: ContentStore, secrets: SecretIndex) -> None:
        self.root = Path(root)
        self.store = store
        self.secrets = secrets

    def write(
        self, rel: str, *, data: bytes | None = None, source: int = -1, mode: int | None = None
    ) -> RecordedWrite:
        """Put ``data`` (or the content of the opened file ``source``) at ``rel``.

        ``mode`` 0755 or 0644; by default a replaced file keeps its executable bit."""
        with WorkspaceFS(self.root) as fs:
            before = self.before(fs, rel)
            if data is not None:
                blob, after = self.store.put_bytes(data), as_text(data)
                fs.write_bytes(rel, data, mode=mode)
            else:
                blob, after = self.store.put_fd(source), as_text(read_head(source, TEXT_LIMIT))
                fs.write_from(rel, source, mode=0o644 if mode is None else mode)
            now = git_mode(fs.mode(rel))
        self.secrets.note(rel, data=data, fd=source)  # scanned: hidden now if it holds secrets
        return RecordedWrite(rel, before.text, after, blob, now, before.content, before.mode)

    def delete(self, rel: str) -> RecordedWrite:
        """Remove the file (or link) at ``rel``."""
        with WorkspaceFS(self.root) as fs:
            before = self.before(fs, rel)
            fs.delete(rel)
        self.secrets.note(rel, data=None)
        return RecordedWrite(rel, before.text, None, "", 0, before.content, before.mode)

    def before(self, fs: WorkspaceFS, rel: str, *, replaced_dir: bool = False) -> Before:
        """What the file held, for the diff and the revert check (``Before()`` when nothing
        was there; ``replaced_dir``: a command replaced what was there, so a directory at
        the path, or a file where the path has a directory, held no file)."""
        try:
            info = fs.stat(rel)
        except (FileNotFoundError, NotADirectoryError):
            return Before()
        except Refused:
            if replaced_dir:
                return Before()
            raise
        if info.kind == "dir":
            if replaced_dir:
                return Before()
            raise Refused(f"{rel!r} is a directory")
        if info.kind != "file":
            return Before(f"[{'symbolic link' if info.kind == 'symlink' else 'special file'}]\n")
        # Refuses a hard-linked file: its other name may be outside the workspace.
        with fs.opened(rel) as fd:
            blob = self.store.id_of_fd(fd)  # its id only: the before side is never committed
            head = read_head(fd, EDIT_CAP) if info.size <= EDIT_CAP else b""
            mode = git_mode(os.fstat(fd).st_mode)
        if info.size > EDIT_CAP:
            return Before(f"[large file: {info.size} bytes]\n", blob, mode)
        return Before(as_text(head), blob, mode)


@dataclass
class CommandWrites:
    """What a command changed: applied (recorded as pending changes), discarded (with the
    rule that refused each), kept in the session's layer (what the repository ignores) and
    new directories left empty (not kept)."""

    allowed: list[RecordedWrite] = field(default_factory=list)
    denied: list[dict[str, str]] = field(default_factory=list)  # path, change, rule
    kept: list[str] = field(default_factory=list)
    empty_dirs: list[str] = field(default_factory=list)
    refusal: str = ""  # why none of the command's writes were applied (its layer's budget)


def shown_path(path: str) -> str:
    """A path as it may be shown and stored: undecodable bytes and controls escaped."""
    text = path.encode("utf-8", "backslashreplace").decode("utf-8")
    return CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)
