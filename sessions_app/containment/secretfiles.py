"""Which workspace files hold secrets: one index per workspace, shared by every session on it.

A file is hidden when its name marks it as secret (``secret_by_name``), when its content
holds secrets (``secretscan``), or when it has more than one link (its other name may be
outside the workspace). What is hidden is hidden from every door the same way: a process
acode starts sees a file hidden by name or link as empty, and one hidden for its content as
a redacted copy (``view``); ``read_file``, search and context show the same text.

The index is a small SQLite database in server state (``ACODE_INDEX_ROOT``, beside the
workspaces and shared between hosts like them), keyed by the workspace's real path, so two
sessions on one workspace share it. Every server write scans what it wrote (``note``). A
workspace only the server changes (a managed one) is trusted between writes; one that can
change behind acode's back (attached) is compared with a names-and-stat walk before each
use, and only files whose size, time or inode moved are scanned again. Verdicts are kept per
content (the git blob id), so the same content is scanned once, and the git view reads them
for the files of the committed tree.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import stat as st
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from roles.writes import path_allowed
from sessions_app.containment.safefs import walk_tree
from sessions_app.containment.secretscan import (
    NO_RULES,
    SecretRules,
    secret_by_name,
)
from sessions_app.containment.secretstandins import (
    SCAN_CAP,
    mask_write,
    read_fd,
    read_nofollow,
    shown_content,
)
from sessions_app.containment.secretstore import (
    blob_id,
    index_db,
    key_path,
    lstat_or_none,
    meta_get,
    meta_set,
    path_key,
    signature,
    workspace_key,
)

SKIPPED_DIRS = frozenset({".git"})
# Why a file is hidden: its name, its content (shown redacted), its links, or its size.
NAME, CONTENT, LINKS, LARGE = "name", "content", "links", "large"


@dataclass(frozen=True)
class Hidden:
    """A hidden file: why, and what stands in for it (a redacted copy; None: empty)."""

    path: str
    why: str
    copy: Path | None = None


class SecretIndex:
    """The hidden files of one workspace (see the module docstring).

    ``home`` is the workspace's directory in server state; ``live`` says the workspace can
    change behind acode's back (walked before each use)."""

    def __init__(
        self,
        root: Path,
        home: Path,
        *,
        live: bool,
        rules: SecretRules = NO_RULES,
        shared: bool = True,
    ) -> None:
        self.root = Path(root)
        self.home = Path(home)
        self.live = live
        self.rules = rules
        self.shared = shared  # kept beside other workspaces' indexes (``home``'s parent)
        self.relative = ""  # where ``root`` is in the workspace this index was found for
        self._held: sqlite3.Connection | None = None

    @contextlib.contextmanager
    def batch(self) -> Iterator[SecretIndex]:
        """One transaction for many reads and verdicts (a git view's build)."""
        with self._db() as db:
            self._held = db
            try:
                yield self
            finally:
                self._held = None

    # -- reading ----------------------------------------------------------------------
    def hidden(self, *, refresh: bool = True) -> list[Hidden]:
        """Every hidden file now, sorted by path (brought up to date first, unless the
        caller just did: ``refresh`` False)."""
        with self._db() as db:
            if refresh:
                self._fresh(db)
            rows = db.execute(
                "SELECT path, hide, blob FROM files WHERE hide != '' ORDER BY path"
            ).fetchall()
        return [
            Hidden(key_path(key), why, self._copy(blob, key_path(key)) if why == CONTENT else None)
            for key, why, blob in rows
        ]

    @property
    def masks_dir(self) -> Path:
        """The masks tree: each hidden file's stand-in at its workspace path."""
        return self.home / "masks"

    def masks(self) -> tuple[Path | None, int]:
        """The masks tree to lay over the workspace (None when nothing is hidden), and how
        many files it hides, brought up to date first."""
        with self._db() as db:
            self._fresh(db)
            count = db.execute("SELECT COUNT(*) FROM files WHERE hide != ''").fetchone()[0]
        return (self.masks_dir if count else None), int(count)

    def nested_git_dirs(self) -> tuple[str, ...]:
        """The ``.git`` directories below the workspace's top (nested repositories: their
        history and config), as the last walk found them: shown empty like the top one."""
        with self._db() as db:
            found = meta_get(db, "git_dirs")
        return tuple(json.loads(found)) if found else ()

    def paths(self) -> list[str]:
        """Workspace-relative paths of the hidden files, sorted."""
        return [h.path for h in self.hidden()]

    def verdict(self, blob: str, path: str) -> bool | None:
        """Whether the content ``blob`` at ``path`` holds secrets (None: not scanned yet;
        the file's name and type take part in the decision)."""
        with self._db() as db:
            row = db.execute(
                "SELECT secret FROM verdicts WHERE blob = ? AND path = ?", (blob, path_key(path))
            ).fetchone()
        return bool(row[0]) if row else None

    def content_verdict(self, path: str, data: bytes) -> bool:
        """Whether ``data`` (the content of ``path``) holds secrets, scanned once per content
        and kept; its redacted copy (``shown``) is written when it does."""
        with self._db() as db:
            return self._verdict(db, path, blob_id(data), data)

    def shown(self, blob: str, path: str) -> bytes:
        """What stands in for the content ``blob`` at ``path`` that holds secrets."""
        return self._copy(blob, path).read_bytes()

    # -- writing ----------------------------------------------------------------------
    def note(self, path: str, *, data: bytes | None, fd: int = -1) -> None:
        """A server write put ``data`` at ``path`` (or the content of the opened ``fd``),
        or removed it (both None/-1); the indexes of workspaces that hold this one (a
        session attached to a directory of another's workspace) learn of it too."""
        if data is None and fd >= 0 and self.shared:
            data = read_fd(fd)
        for other in enclosing_indexes(self):
            other.note(f"{other.relative}/{path}", data=data)
        with self._db() as db:
            if data is None and fd < 0:
                self._forget(db, path)
                return
            try:
                info = os.lstat(self.root / path)
            except OSError:
                self._forget(db, path)
                return
            self._record(db, path, info, data if data is not None else read_fd(fd))

    def rebuild(self) -> None:
        """Scan the whole workspace again (after a checkout)."""
        with self._db() as db:
            db.execute("DELETE FROM files")
            shutil.rmtree(self.masks_dir, ignore_errors=True)
            self._walk(db, known={})
            meta_set(db, "built", self.rules.version)

    # -- internals --------------------------------------------------------------------
    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        if self._held is not None:  # inside batch(): its transaction
            yield self._held
            return
        with index_db(self.home) as db:
            yield db

    def hidden_among(self, paths: list[str]) -> set[str]:
        """Which of ``paths`` are hidden (as the index last saw them)."""
        if not paths:
            return set()
        with self._db() as db:
            marks = ",".join("?" * len(paths))
            rows = db.execute(
                f"SELECT path FROM files WHERE hide != '' AND path IN ({marks})",
                [path_key(p) for p in paths],
            ).fetchall()
        return {key_path(row[0]) for row in rows}

    def _fresh(self, db: sqlite3.Connection) -> None:
        """Scan what changed: everything when the index is new or the rules moved, the
        files whose stat moved when the workspace is live."""
        if meta_get(db, "built") != self.rules.version:
            db.execute("DELETE FROM files")
            db.execute("DELETE FROM verdicts")
            shutil.rmtree(self.masks_dir, ignore_errors=True)
            self._walk(db, known={})
            meta_set(db, "built", self.rules.version)
        elif self.live:
            known = {
                key_path(row[0]): tuple(row[1:])
                for row in db.execute("SELECT path, size, mtime, ino, nlink FROM files")
            }
            self._walk(db, known=known)

    def note_under(self, rels: list[str]) -> None:
        """The server put what is now at each of ``rels`` (a file, or a whole directory) in
        place of what was there: what a session keeps of a command (its session layer)."""
        with self._db() as db:
            for rel in rels:
                key = path_key(rel)
                below = db.execute(
                    "SELECT path FROM files WHERE path = ? OR (path > ? AND path < ?)",
                    (key, key + b"/", key + b"0"),
                ).fetchall()
                for (row,) in below:
                    self._forget(db, key_path(row))
                self._walk(db, known={}, under=rel)

    def _walk(
        self, db: sqlite3.Connection, *, known: dict[str, tuple[int, ...]], under: str = ""
    ) -> None:
        pending: dict[str, os.stat_result] = {}  # the directory being yielded, by name

        def keep(entry: os.DirEntry[str]) -> bool:
            if not entry.is_file(follow_symlinks=False):
                return False
            pending[entry.name] = entry.stat(follow_symlinks=False)
            return True

        found: set[str] = set()
        git_dirs: set[str] = set()

        def descend(rel: str) -> bool:
            if rel.rpartition("/")[2].lower() not in SKIPPED_DIRS:
                return True
            if rel.lower() != ".git":  # the top one is masked by the view itself
                git_dirs.add(rel)
            return False

        try:
            top = os.open(self.root / under, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:  # a file (or nothing) there
            info = lstat_or_none(self.root / under) if under else None
            if info is not None and st.S_ISREG(info.st_mode):
                self._record(db, under, info, None)
            return
        try:
            walk = walk_tree(top, under, descend=descend, keep=keep)
            for rel in walk:  # a directory's files are yielded before the next is read
                info = pending.pop(rel.rpartition("/")[2])
                found.add(rel)
                if known.get(rel) != signature(info):
                    self._record(db, rel, info, None)
        finally:
            os.close(top)
        for gone in set(known) - found:
            self._forget(db, gone)
        self._note_git_dirs(db, git_dirs, under)

    def _note_git_dirs(self, db: sqlite3.Connection, found: set[str], under: str) -> None:
        before = meta_get(db, "git_dirs")
        kept = {
            rel
            for rel in (json.loads(before) if before else [])
            if under and rel != under and not rel.startswith(f"{under}/")
        }
        meta_set(db, "git_dirs", json.dumps(sorted(kept | found)))

    def _record(
        self, db: sqlite3.Connection, rel: str, info: os.stat_result, data: bytes | None
    ) -> None:
        why, blob = "", ""
        if secret_by_name(rel, self.rules):
            why = NAME
        elif info.st_nlink > 1:
            why = LINKS
        else:
            if data is None:
                data = read_nofollow(self.root, rel)
            if data is None or len(data) > SCAN_CAP:
                # Too large to scan: hidden whole, unless a team said the path holds no
                # secret (a data set: Secret rules, allowed paths).
                allowed = bool(self.rules.allow_paths) and path_allowed(rel, self.rules.allow_paths)
                why = LARGE if data is not None and not allowed else ""
            else:
                blob = blob_id(data)
                why = CONTENT if self._verdict(db, rel, blob, data) else ""
        self._moved(db, rel, why, blob)
        db.execute(
            "INSERT OR REPLACE INTO files (path, size, mtime, ino, nlink, blob, hide) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (path_key(rel), *signature(info), blob, why),
        )
        mask_write(
            self.masks_dir, rel, self._copy(blob, rel) if why == CONTENT else None, hidden=bool(why)
        )

    def generation(self) -> int:
        """A number that moves whenever what is hidden moves: a process started with an
        older view (a running MCP server) is started again before it is used."""
        with self._db() as db:
            self._fresh(db)
            return int(meta_get(db, "generation") or 0)

    def _moved(self, db: sqlite3.Connection, rel: str, hide: str, blob: str) -> None:
        row = db.execute("SELECT hide, blob FROM files WHERE path = ?", (path_key(rel),)).fetchone()
        before = (row[0], row[1] if row[0] == CONTENT else "") if row else ("", "")
        if before != (hide, blob if hide == CONTENT else ""):
            meta_set(db, "generation", str(int(meta_get(db, "generation") or 0) + 1))

    def _forget(self, db: sqlite3.Connection, rel: str) -> None:
        self._moved(db, rel, "", "")
        db.execute("DELETE FROM files WHERE path = ?", (path_key(rel),))
        mask_write(self.masks_dir, rel, None, hidden=False)

    def _verdict(self, db: sqlite3.Connection, rel: str, blob: str, data: bytes) -> bool:
        row = db.execute(
            "SELECT secret FROM verdicts WHERE blob = ? AND path = ?", (blob, path_key(rel))
        ).fetchone()
        if row is not None:
            return bool(row[0])
        shown = shown_content(rel, data, self.rules)
        secret = shown != data
        if secret:
            self._write_copy(blob, rel, shown)
        db.execute(
            "INSERT OR REPLACE INTO verdicts (blob, path, secret) VALUES (?, ?, ?)",
            (blob, path_key(rel), int(secret)),
        )
        return secret

    def _copy(self, blob: str, path: str) -> Path:
        name = hashlib.sha256(path_key(path) + b"\0" + blob.encode()).hexdigest()[:40]
        return self.home / "redacted" / name

    def _write_copy(self, blob: str, path: str, shown: bytes) -> None:
        target = self._copy(blob, path)
        if target.is_file():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}")
        tmp.write_bytes(shown)
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)


def enclosing_indexes(index: SecretIndex) -> list[SecretIndex]:
    """The indexes, kept beside ``index``, of the workspaces that hold its root in a
    directory of theirs (their ``relative`` says where)."""
    if not index.shared:
        return []
    found = []
    root = index.root.resolve()
    for parent in root.parents:
        home = index.home.parent / workspace_key(parent)
        if (home / "secrets.sqlite3").is_file():
            other = SecretIndex(parent, home, live=False, rules=index.rules, shared=False)
            other.relative = str(root.relative_to(parent))
            found.append(other)
    return found
