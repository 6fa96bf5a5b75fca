"""The one way the server writes a workspace.

``WorkspaceWriter`` is the only code that changes a workspace: it stores the exact bytes in
the content store, replaces the file atomically through directory fds (``safefs``), keeps
the secret-file index true, and returns what to record as a pending change.
``layer_apply`` applies a command's layer through it, asking the role's write policy
(``roles.access.WritePolicy``, the one write-path rule the file tools are checked by too)
about every entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from roles.access import CONTROL, WritePolicy, is_git_path
from sessions_app.containment.content import ContentStore
from sessions_app.containment.layer import LayerChange, opened_path, read_head
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
    ``mode`` their git file mode (0 when deleted).
    """

    path: str
    before: str | None
    after: str | None
    content: str
    mode: int


def as_text(data: bytes) -> str:
    """A file's bytes as diff text, or a placeholder for binary or very large content."""
    if len(data) > TEXT_LIMIT or is_binary(data):
        return f"[binary or large file: {len(data)} bytes]\n"
    return data.decode("utf-8", "replace")


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
            before = self._before(fs, rel)
            if data is not None:
                blob, after = self.store.put_bytes(data), as_text(data)
                fs.write_bytes(rel, data, mode=mode)
            else:
                blob, after = self.store.put_fd(source), as_text(read_head(source, TEXT_LIMIT))
                fs.write_from(rel, source, mode=0o644 if mode is None else mode)
            executable = bool(fs.mode(rel) & 0o111)
        self.secrets.note(rel, data=data, fd=source)  # scanned: hidden now if it holds secrets
        return RecordedWrite(rel, before, after, blob, GIT_EXECUTABLE if executable else GIT_FILE)

    def delete(self, rel: str) -> RecordedWrite:
        """Remove the file (or link) at ``rel``."""
        with WorkspaceFS(self.root) as fs:
            before = self._before(fs, rel)
            fs.delete(rel)
        self.secrets.note(rel, data=None)
        return RecordedWrite(rel, before, None, "", 0)

    @staticmethod
    def _before(fs: WorkspaceFS, rel: str) -> str | None:
        """What the file held, for the diff (None when nothing was there)."""
        try:
            info = fs.stat(rel)
        except FileNotFoundError:
            return None
        if info.kind == "dir":
            raise Refused(f"{rel!r} is a directory")
        if info.kind != "file":
            return f"[{'symbolic link' if info.kind == 'symlink' else 'special file'}]\n"
        if info.size > EDIT_CAP and info.nlink == 1:
            return f"[large file: {info.size} bytes]\n"
        # Refuses a hard-linked file: its other name may be outside the workspace.
        return as_text(fs.read_bytes(rel, EDIT_CAP))


@dataclass
class CommandWrites:
    """What a command changed: applied (to record as pending changes) and discarded."""

    allowed: list[RecordedWrite] = field(default_factory=list)
    denied: list[dict[str, str]] = field(default_factory=list)  # path, change, rule


def shown_path(path: str) -> str:
    """A path as it may be shown and stored: undecodable bytes and controls escaped."""
    text = path.encode("utf-8", "backslashreplace").decode("utf-8")
    return CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def layer_apply(
    writer: WorkspaceWriter,
    changes: list[LayerChange],
    *,
    source_root: Path,
    policy: WritePolicy,
    record: Callable[[RecordedWrite], None] | None = None,
) -> CommandWrites:
    """Apply each change ``policy`` allows (content read from ``source_root``: the layer's
    upper directory or the workspace copy); the rest is discarded and listed with its rule.
    ``record`` is called with each applied change as soon as it is applied."""
    result = CommandWrites()
    for change in changes:
        denial = {"path": shown_path(change.path), "change": change.change}
        if change.kind == "dir" and not is_git_path(change.path):
            if change.change == "deleted":
                with WorkspaceFS(writer.root) as fs:
                    fs.remove_empty_dir(change.path)  # only once all it held went
            else:  # a directory is never applied; only its special bits are reported
                result.denied.append({**denial, "rule": "file_mode"})
            continue
        decision = policy.check(
            change.path, change=change.change,
            kind="file" if change.change == "deleted" else change.kind,
            mode=0 if change.change == "deleted" else change.mode,
        )  # fmt: skip
        if not decision.allowed:
            result.denied.append({**denial, "rule": decision.rule})
            continue
        try:
            if change.change == "deleted":
                applied = writer.delete(change.path)
            else:
                if change.change == "modified":  # a directory the command replaced, now empty
                    with WorkspaceFS(writer.root) as fs:
                        fs.remove_empty_dir(change.path)
                with opened_path(source_root, change.source) as fd:
                    if fd < 0:
                        raise Refused("it is not a regular file")
                    mode = 0o755 if change.mode & 0o111 else 0o644
                    applied = writer.write(change.path, source=fd, mode=mode)
        except (Refused, OSError) as exc:  # e.g. its directory is a file the role kept
            problem = exc.reason if isinstance(exc, Refused) else str(exc)
            result.denied.append({**denial, "rule": "file_kind", "problem": problem[:300]})
            continue
        result.allowed.append(applied)
        if record is not None:
            record(applied)
    return result
