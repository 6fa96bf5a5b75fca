"""A command's writes, applied to the workspace as one unit, cheaply.

``layer_apply`` takes what ``layerscan`` read from a command's layer and:

1. **decides** every change by the role's write rule (``roles.access.WritePolicy``, the one
   the file tools are checked by too); a refused change refuses its ``group`` with it (a
   directory replaced by a file stands or falls with what the replacement deleted), and
   the refusal says which;
2. **stages** each file it will write in a private directory of the workspace (copied from
   the layer, hashed and stored in-process on the way): every failure happens here, before
   anything is recorded or moved;
3. **records** every change at once (``ApplyJournal.begin``: the pending changes and a
   journal of the moves left, in one transaction);
4. **moves** the staged files into place (renames), deletes what goes, syncs once, and
   closes the journal (``ApplyJournal.end``).

A worker that dies between 3 and 4 leaves the journal: ``apply_resume`` finishes the
moves, so the workspace always ends up as the pending changes say.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from roles.access import WritePolicy
from sessions_app.containment.layer import remove_tree
from sessions_app.containment.layerscan import LayerChange, LayerScan
from sessions_app.containment.nofollow import opened_path, read_head
from sessions_app.containment.paths import split_path
from sessions_app.containment.safefs import DIR_FLAGS, TMP_FLAGS, Refused, WorkspaceFS
from sessions_app.containment.writes import (
    TEXT_LIMIT,
    CommandWrites,
    RecordedWrite,
    WorkspaceWriter,
    as_text,
    git_mode,
    shown_path,
)

STAGING_PREFIX = ".acode-staging-"


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
    plan = _Plan(f"{STAGING_PREFIX}{secrets.token_hex(8)}")
    staging = writer.root / plan.staging
    os.mkdir(staging, 0o700)
    recorded = False
    try:
        _stage(writer, allowed, source_root, plan, result)
        if plan.ops:
            journal.begin(plan.writes, plan.as_dict())
            recorded = True  # from here on, a failure leaves the journal to finish it
            apply_resume(writer.root, plan.as_dict())
            for write in plan.writes:
                writer.secrets.note(write.path, exists=write.after is not None)
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


def _stage(
    writer: WorkspaceWriter,
    changes: list[LayerChange],
    source_root: Path,
    plan: _Plan,
    result: CommandWrites,
) -> None:
    """Stage every file to write and record every change; a failure refuses the change
    and its group (staged files of a refused group are left for the staging removal)."""
    staged: list[tuple[LayerChange, RecordedWrite, list[Any]]] = []
    failed: dict[str, str] = {}
    staging = os.open(writer.root / plan.staging, DIR_FLAGS)
    try:
        with WorkspaceFS(writer.root) as fs:
            for number, change in enumerate(changes):
                try:
                    write, op = _prepare(writer, fs, change, source_root, staging, number)
                except (Refused, OSError) as exc:
                    problem = exc.reason if isinstance(exc, Refused) else str(exc)
                    result.denied.append({"path": shown_path(change.path), "change": change.change,
                                          "rule": "file_kind", "problem": problem[:300]})  # fmt: skip
                    failed.setdefault(change.group or change.path, change.path)
                    continue
                staged.append((change, write, op))
    finally:
        os.close(staging)
    kept = {id(c) for c in _without_groups([c for c, _, _ in staged], failed, result)}
    for change, write, op in staged:
        if id(change) in kept:
            plan.ops.append(op)
            if write.path:  # a directory's removal records nothing
                plan.writes.append(write)


def _prepare(
    writer: WorkspaceWriter,
    fs: WorkspaceFS,
    change: LayerChange,
    source_root: Path,
    staging: int,
    number: int,
) -> tuple[RecordedWrite, list[Any]]:
    """What applying ``change`` records, and its move; a file's content is staged."""
    if change.kind == "dir":  # deleted: its content went first
        return RecordedWrite("", None, None, "", 0), ["rmdir", change.path]
    replaced = bool(change.group)
    before = writer.before(fs, change.path, replaced_dir=replaced)
    if change.change == "deleted":
        write = RecordedWrite(change.path, before.text, None, "", 0, before.content, before.mode)
        return write, ["delete", change.path]
    split_path(change.path)  # a path the writer can address, or Refused
    mode = 0o755 if change.mode & 0o111 else 0o644
    name = str(number)
    with opened_path(source_root, change.source) as fd:
        if fd < 0:
            raise Refused("it is not a regular file")
        blob, after = writer.store.put_fd(fd), as_text(read_head(fd, TEXT_LIMIT))
        _copy(fd, staging, name, mode)
    write = RecordedWrite(change.path, before.text, after, blob, git_mode(mode),
                          before.content, before.mode)  # fmt: skip
    return write, ["put", name, change.path, mode]


def _copy(source: int, staging: int, name: str, mode: int) -> None:
    out = os.open(name, TMP_FLAGS, 0o600, dir_fd=staging)
    try:
        os.fchmod(out, mode)
        os.lseek(source, 0, os.SEEK_SET)
        while chunk := os.read(source, 1 << 20):
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view) :]
    finally:
        os.close(out)


def apply_resume(root: Path, plan: dict[str, Any]) -> None:
    """Make the moves of ``plan`` that are not made yet (each is idempotent), remove the
    staging directory and sync: what applying does after recording, and what finishes an
    apply a dead worker left half done."""
    staging = Path(root) / str(plan["staging"])
    with WorkspaceFS(root) as fs:
        for op in plan["ops"]:
            if op[0] == "delete":
                with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                    fs.delete(op[1])
            elif op[0] == "rmdir":
                fs.remove_empty_dir(op[1])
            else:
                _put(fs, staging, op[1], op[2], op[3])
        _sync(fs)
    if staging.exists():
        remove_tree(staging)


def _put(fs: WorkspaceFS, staging: Path, name: str, rel: str, mode: int) -> None:
    """Move the staged file ``name`` to ``rel`` (gone: moved already)."""
    *parents, last = split_path(rel)
    try:
        source = os.open(staging, DIR_FLAGS)
    except FileNotFoundError:
        return
    try:
        if not os.path.lexists(f"/proc/self/fd/{source}/{name}"):
            return
        fs.remove_empty_dir(rel)  # a directory the command replaced, emptied by now
        with fs.directory(parents, create=True) as parent:
            try:
                os.rename(name, last, src_dir_fd=source, dst_dir_fd=parent)
            except FileNotFoundError:  # moved meanwhile by another resume
                return
            except OSError as exc:
                if exc.errno != errno.EXDEV:  # a mount inside an attached directory
                    raise
                with opened_path(staging, name) as fd:
                    fs.write_from(rel, fd, mode=mode)
                os.unlink(name, dir_fd=source)
    finally:
        os.close(source)


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
