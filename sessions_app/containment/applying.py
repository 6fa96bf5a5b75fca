"""A command's writes, applied to the workspace as one unit, cheaply.

``layer_apply`` takes what ``layerscan`` read from a command's layer and:

1. **decides** every change by the role's write rule (``roles.writes.WritePolicy``, the one
   the file tools are checked by too); a refused change refuses its ``group`` with it (a
   directory replaced by a file stands or falls with what the replacement deleted), and
   the refusal says which;
2. **stages** the command's tree in a private directory beside its layer (one rename) and
   hashes and stores each file it will write in-process: every failure happens here,
   before anything is recorded or moved;
3. **records** every change at once (``ApplyJournal.begin``: the pending changes and a
   journal of the moves left, in one transaction);
4. **moves** the staged files into place (one rename each), deletes what goes, syncs once,
   and closes the journal (``ApplyJournal.end``).

A worker that dies between 3 and 4 leaves the journal: ``apply_resume`` finishes the
moves, so the workspace always ends up as the pending changes say.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat as st
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from roles.writes import WritePolicy
from sessions_app.containment.applymoves import STAGING_PREFIX, DirCache, apply_resume
from sessions_app.containment.layer import remove_tree
from sessions_app.containment.layerscan import LayerChange, LayerScan
from sessions_app.containment.nofollow import opened_file, read_head
from sessions_app.containment.paths import split_path
from sessions_app.containment.safefs import (
    DIR_FLAGS,
    READ_FLAGS,
    TMP_FLAGS,
    Refused,
    WorkspaceFS,
)
from sessions_app.containment.writes import (
    TEXT_LIMIT,
    Before,
    CommandWrites,
    RecordedWrite,
    WorkspaceWriter,
    as_text,
    git_mode,
    shown_path,
)


class ApplyJournal(Protocol):
    """Records a command's changes with the moves left to make (``begin``, one
    transaction), and forgets the moves once they are made (``end``)."""

    def begin(self, writes: list[RecordedWrite], plan: dict[str, Any]) -> None: ...

    def end(self) -> None: ...


@dataclass
class _Plan:
    """What applying does, in order: deletions (deepest first), directories removed, then
    staged files put in place (shallowest first)."""

    staging: str
    ops: list[list[Any]] = field(default_factory=list)
    writes: list[RecordedWrite] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"staging": self.staging, "ops": self.ops}


def layer_apply(
    writer: WorkspaceWriter,
    scan: LayerScan,
    *,
    source_root: Path,
    policy: WritePolicy,
    journal: ApplyJournal,
) -> CommandWrites:
    """Apply every change of ``scan`` the role may make, as one unit (see the module
    docstring); the rest is discarded and listed with its rule."""
    result = CommandWrites(empty_dirs=list(scan.empty_dirs))
    allowed = _decide(scan, policy, result)
    # Staged beside the command's layer (server state no sandbox sees), from where each
    # file moves into the workspace with one rename.
    staging = source_root.parent.parent / f"{STAGING_PREFIX}{secrets.token_hex(8)}"
    plan = _Plan(str(staging))
    adopted = _adopt(source_root, staging)
    recorded = False
    try:
        _stage(writer, allowed, staging if adopted else source_root, plan, result, adopted)
        if plan.ops:
            journal.begin(plan.writes, plan.as_dict())
            recorded = True  # from here on, a failure leaves the journal to finish it
            apply_resume(writer.root, plan.as_dict())
            _note_secrets(writer, plan.writes)
            journal.end()
    finally:
        if not recorded and staging.exists():
            remove_tree(staging)
    result.allowed = plan.writes
    return result


def _decide(scan: LayerScan, policy: WritePolicy, result: CommandWrites) -> list[LayerChange]:
    """The changes the role may make; the others (and their groups) go to ``denied``."""
    refused_groups: dict[str, str] = {}
    for entry in scan.refused:
        result.denied.append({k: v for k, v in entry.items() if k != "group"})
        refused_groups.setdefault(entry["group"], entry["path"])
    candidates = []
    for change in scan.changes:
        denial = {"path": shown_path(change.path), "change": change.change}
        if change.kind == "dir":
            if change.change != "deleted":  # only a directory's special bits are reported
                result.denied.append({**denial, "rule": "file_mode"})
                refused_groups.setdefault(change.group or change.path, change.path)
            else:
                candidates.append(change)
            continue
        decision = policy.check(
            change.path, change=change.change,
            kind="file" if change.change == "deleted" else change.kind,
            mode=0 if change.change == "deleted" else change.mode,
        )  # fmt: skip
        if decision.allowed:
            candidates.append(change)
            continue
        result.denied.append(
            {**denial, "rule": decision.rule, **({"code": decision.code} if decision.code else {})}
        )
        if change.group:
            refused_groups.setdefault(change.group, change.path)
    return _without_groups(candidates, refused_groups, result)


def _without_groups(
    changes: list[LayerChange], refused: dict[str, str], result: CommandWrites
) -> list[LayerChange]:
    """``changes`` less those whose group had a refusal (listed as refused with it)."""
    kept = []
    for change in changes:
        culprit = refused.get(change.group) if change.group else None
        if culprit is None:
            kept.append(change)
            continue
        result.denied.append({
            "path": shown_path(change.path), "change": change.change, "rule": "depends",
            "problem": f"refused with {shown_path(culprit)}",
        })  # fmt: skip
    return kept


def _note_secrets(writer: WorkspaceWriter, writes: list[RecordedWrite]) -> None:
    """The workspace's secret index learns every file written or removed (scanned by
    content), in one transaction."""
    with writer.secrets.batch(), WorkspaceFS(writer.root) as fs:
        for write in writes:
            if write.after is None:
                writer.secrets.note(write.path, data=None)
                continue
            try:
                with fs.opened(write.path) as fd:
                    writer.secrets.note(write.path, data=None, fd=fd)
            except (OSError, Refused):  # gone or not a plain file: the index rescans it
                writer.secrets.note(write.path, data=None)


def _adopt(source_root: Path, staging: Path) -> bool:
    """Move the command's whole tree into the workspace as the staging directory (one
    rename); False when they are on different file systems (then files are copied in)."""
    try:
        os.rename(source_root, staging)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        os.mkdir(staging, 0o700)
        return False
    os.chmod(staging, 0o700)
    return True


def _stage(
    writer: WorkspaceWriter,
    changes: list[LayerChange],
    source_root: Path,
    plan: _Plan,
    result: CommandWrites,
    adopted: bool,
) -> None:
    """Stage every file to write and record every change; a failure refuses the change
    and its group (staged files of a refused group are left for the staging removal)."""
    staged: list[tuple[LayerChange, RecordedWrite, list[Any]]] = []
    failed: dict[str, str] = {}
    stager = _Stager(writer, source_root, Path(plan.staging), adopted)
    try:
        with WorkspaceFS(writer.root) as fs:
            for number, change in enumerate(changes):
                try:
                    write, op = stager.prepare(fs, change, number)
                except (Refused, OSError) as exc:
                    problem = exc.reason if isinstance(exc, Refused) else str(exc)
                    result.denied.append({"path": shown_path(change.path), "change": change.change,
                                          "rule": "file_kind", "problem": problem[:300]})  # fmt: skip
                    failed.setdefault(change.group or change.path, change.path)
                    continue
                staged.append((change, write, op))
    finally:
        stager.close()
    kept = {id(c) for c in _without_groups([c for c, _, _ in staged], failed, result)}
    for change, write, op in staged:
        if id(change) in kept:
            plan.ops.append(op)
            if write.path:  # a directory's removal records nothing
                plan.writes.append(write)


class _Stager:
    """Hashes and stores each file to write, in the command's tree moved into the staging
    directory (``adopted``), or copied there from the command's tree on another file
    system; the directories it reads are opened once each, never through a link."""

    def __init__(
        self, writer: WorkspaceWriter, source_root: Path, staging: Path, adopted: bool
    ) -> None:
        self.writer, self.adopted = writer, adopted
        self.staging = os.open(staging, DIR_FLAGS)
        self.dirs = DirCache(os.open(source_root, DIR_FLAGS))

    def close(self) -> None:
        os.close(self.staging)
        self.dirs.close()

    def prepare(
        self, fs: WorkspaceFS, change: LayerChange, number: int
    ) -> tuple[RecordedWrite, list[Any]]:
        """What applying ``change`` records, and its move; a file's content is staged."""
        if change.kind == "dir":  # deleted: its content went first
            return RecordedWrite("", None, None, "", 0), ["rmdir", change.path]
        replaced = bool(change.group)
        if change.change == "created" and not replaced:  # not in the workspace: nothing before
            before = Before()
        else:
            before = self.writer.before(fs, change.path, replaced_dir=replaced)
        if change.change == "deleted":
            write = RecordedWrite(change.path, before.text, None, "", 0, before.content,
                                  before.mode)  # fmt: skip
            return write, ["delete", change.path]
        split_path(change.path)  # a path the writer can address, or Refused
        mode = 0o755 if change.mode & 0o111 else 0o644
        name = change.source if self.adopted else str(number)
        fd = self._take(change.source, name)
        try:
            os.fchmod(fd, mode)
            blob = self.writer.store.put_fd(fd)
            after = as_text(read_head(fd, TEXT_LIMIT))
        finally:
            os.close(fd)
        write = RecordedWrite(change.path, before.text, after, blob, git_mode(mode),
                              before.content, before.mode)  # fmt: skip
        return write, ["put", name, change.path, mode, replaced]

    def _take(self, source: str, name: str) -> int:
        """The file at ``source`` as the staged file ``name``, opened (a regular file only)."""
        *dirs, last = source.split("/")
        parent = self.dirs.get(dirs)
        if parent < 0:
            raise Refused("it is not a regular file")
        info = os.stat(last, dir_fd=parent, follow_symlinks=False)
        if not st.S_ISREG(info.st_mode):
            raise Refused("it is not a regular file")
        if not self.adopted:
            with opened_file(parent, last) as fd:
                if fd < 0:
                    raise Refused("it is not a regular file") from None
                _copy(fd, self.staging, name)
            parent, last = self.staging, name
        fd = os.open(last, READ_FLAGS, dir_fd=parent)
        if not st.S_ISREG(os.fstat(fd).st_mode):  # pragma: no cover - checked just now
            os.close(fd)
            raise Refused("it is not a regular file")
        os.set_blocking(fd, True)
        return fd


def _copy(source: int, staging: int, name: str) -> None:
    out = os.open(name, TMP_FLAGS, 0o600, dir_fd=staging)
    try:
        os.lseek(source, 0, os.SEEK_SET)
        while chunk := os.read(source, 1 << 20):
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view) :]
    finally:
        os.close(out)
