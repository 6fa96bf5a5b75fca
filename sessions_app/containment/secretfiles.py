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
import os
import shutil
import sqlite3
import stat as st
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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

SKIPPED_DIRS = frozenset({".git"})
SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path BLOB PRIMARY KEY, size INTEGER, mtime INTEGER, ino INTEGER, nlink INTEGER,
    blob TEXT, hide TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS files_hidden ON files (hide) WHERE hide != '';
CREATE TABLE IF NOT EXISTS verdicts (
    blob TEXT NOT NULL, path BLOB NOT NULL, secret INTEGER NOT NULL, PRIMARY KEY (blob, path)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_READY: set[Path] = set()  # index files whose schema this process made sure of
# Why a file is hidden: its name, its content (shown redacted), its links, or its size.
NAME, CONTENT, LINKS, LARGE = "name", "content", "links", "large"


@dataclass(frozen=True)
class Hidden:
    """A hidden file: why, and what stands in for it (a redacted copy; None: empty)."""

    path: str
    why: str
    copy: Path | None = None


def workspace_key(workspace: Path) -> str:
    """The index's name for a workspace: a digest of its real path."""
    return hashlib.sha256(str(Path(workspace).resolve()).encode()).hexdigest()[:32]


def blob_id(data: bytes) -> str:
    """Git's blob id of ``data`` (SHA-1), the key verdicts are kept by."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class SecretIndex:
    """The hidden files of one workspace (see the module docstring).

    ``home`` is the workspace's directory in server state; ``live`` says the workspace can
    change behind acode's back (walked before each use)."""

    def __init__(
        self, root: Path, home: Path, *, live: bool, rules: SecretRules = NO_RULES
    ) -> None:
        self.root = Path(root)
        self.home = Path(home)
        self.live = live
        self.rules = rules
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
    def hidden(self) -> list[Hidden]:
        """Every hidden file now, sorted by path (brought up to date first)."""
        with self._db() as db:
            self._fresh(db)
            rows = db.execute(
                "SELECT path, hide, blob FROM files WHERE hide != '' ORDER BY path"
            ).fetchall()
        return [
            Hidden(_path(key), why, self._copy(blob, _path(key)) if why == CONTENT else None)
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

    def paths(self) -> list[str]:
        """Workspace-relative paths of the hidden files, sorted."""
        return [h.path for h in self.hidden()]

    def verdict(self, blob: str, path: str) -> bool | None:
        """Whether the content ``blob`` at ``path`` holds secrets (None: not scanned yet;
        the file's name and type take part in the decision)."""
        with self._db() as db:
            row = db.execute(
                "SELECT secret FROM verdicts WHERE blob = ? AND path = ?", (blob, _key(path))
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
        or removed it (both None/-1)."""
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
            self._meta_set(db, "built", self.rules.version)

    # -- internals --------------------------------------------------------------------
    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        if self._held is not None:  # inside batch(): its transaction
            yield self._held
            return
        path = self.home / "secrets.sqlite3"
        if path not in _READY:
            self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        db = sqlite3.connect(path, timeout=300, isolation_level=None)  # a first scan may be long
        try:
            if path not in _READY:
                db.executescript(SCHEMA)
                _READY.add(path)
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()

    def hidden_among(self, paths: list[str]) -> set[str]:
        """Which of ``paths`` are hidden (as the index last saw them)."""
        if not paths:
            return set()
        with self._db() as db:
            marks = ",".join("?" * len(paths))
            rows = db.execute(
                f"SELECT path FROM files WHERE hide != '' AND path IN ({marks})",
                [_key(p) for p in paths],
            ).fetchall()
        return {_path(row[0]) for row in rows}

    def _meta(self, db: sqlite3.Connection, key: str) -> str:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else ""

    def _meta_set(self, db: sqlite3.Connection, key: str, value: str) -> None:
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def _fresh(self, db: sqlite3.Connection) -> None:
        """Scan what changed: everything when the index is new or the rules moved, the
        files whose stat moved when the workspace is live."""
        if self._meta(db, "built") != self.rules.version:
            db.execute("DELETE FROM files")
            db.execute("DELETE FROM verdicts")
            shutil.rmtree(self.masks_dir, ignore_errors=True)
            self._walk(db, known={})
            self._meta_set(db, "built", self.rules.version)
        elif self.live:
            known = {
                _path(row[0]): tuple(row[1:])
                for row in db.execute("SELECT path, size, mtime, ino, nlink FROM files")
            }
            self._walk(db, known=known)

    def note_under(self, rels: list[str]) -> None:
        """The server put what is now at each of ``rels`` (a file, or a whole directory) in
        place of what was there: what a session keeps of a command (its session layer)."""
        with self._db() as db:
            for rel in rels:
                key = _key(rel)
                below = db.execute(
                    "SELECT path FROM files WHERE path = ? OR (path > ? AND path < ?)",
                    (key, key + b"/", key + b"0"),
                ).fetchall()
                for (row,) in below:
                    self._forget(db, _path(row))
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
        try:
            top = os.open(self.root / under, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:  # a file (or nothing) there
            info = _lstat(self.root / under) if under else None
            if info is not None and st.S_ISREG(info.st_mode):
                self._record(db, under, info, None)
            return
        try:
            walk = walk_tree(top, under, descend=lambda n: n not in SKIPPED_DIRS, keep=keep)
            for rel in walk:  # a directory's files are yielded before the next is read
                info = pending.pop(rel.rpartition("/")[2])
                found.add(rel)
                if known.get(rel) != _signature(info):
                    self._record(db, rel, info, None)
        finally:
            os.close(top)
        for gone in set(known) - found:
            self._forget(db, gone)

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
                why = LARGE if data is not None else ""
            else:
                blob = blob_id(data)
                why = CONTENT if self._verdict(db, rel, blob, data) else ""
        db.execute(
            "INSERT OR REPLACE INTO files (path, size, mtime, ino, nlink, blob, hide) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (_key(rel), *_signature(info), blob, why),
        )
        mask_write(
            self.masks_dir, rel, self._copy(blob, rel) if why == CONTENT else None, hidden=bool(why)
        )

    def _forget(self, db: sqlite3.Connection, rel: str) -> None:
        db.execute("DELETE FROM files WHERE path = ?", (_key(rel),))
        mask_write(self.masks_dir, rel, None, hidden=False)

    def _verdict(self, db: sqlite3.Connection, rel: str, blob: str, data: bytes) -> bool:
        row = db.execute(
            "SELECT secret FROM verdicts WHERE blob = ? AND path = ?", (blob, _key(rel))
        ).fetchone()
        if row is not None:
            return bool(row[0])
        shown = shown_content(rel, data, self.rules)
        secret = shown != data
        if secret:
            self._write_copy(blob, rel, shown)
        db.execute(
            "INSERT OR REPLACE INTO verdicts (blob, path, secret) VALUES (?, ?, ?)",
            (blob, _key(rel), int(secret)),
        )
        return secret

    def _copy(self, blob: str, path: str) -> Path:
        name = hashlib.sha256(_key(path) + b"\0" + blob.encode()).hexdigest()[:40]
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


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _signature(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_nlink)


def _key(path: str) -> bytes:
    """A path as the index stores it: its bytes (names need not be UTF-8)."""
    return os.fsencode(path)


def _path(key: bytes) -> str:
    return os.fsdecode(key)
