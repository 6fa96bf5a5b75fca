"""Where a workspace's secret index keeps its rows: a small SQLite database in its home
(``files``: each file's stat signature, content id and why it is hidden; ``verdicts``: per
content and path, whether it holds secrets; ``meta``: when it was built, with which rules,
its generation, the nested git directories found). One writer at a time (``BEGIN
IMMEDIATE``): processes on several hosts share an index root through POSIX locks."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

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


def index_remove(home: Path) -> None:
    """Remove the index kept in ``home`` (a session archived); made again on next use."""
    _READY.discard(home / "secrets.sqlite3")
    shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def index_db(home: Path) -> Iterator[sqlite3.Connection]:
    """One transaction on the index kept in ``home`` (made on first use)."""
    path = home / "secrets.sqlite3"
    if path not in _READY:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
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


def meta_get(db: sqlite3.Connection, key: str) -> str:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row else ""


def meta_set(db: sqlite3.Connection, key: str, value: str) -> None:
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def workspace_key(workspace: Path) -> str:
    """The index's name for a workspace: a digest of its real path."""
    return hashlib.sha256(str(Path(workspace).resolve()).encode()).hexdigest()[:32]


def blob_id(data: bytes) -> str:
    """Git's blob id of ``data`` (SHA-1), the key verdicts are kept by."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def lstat_or_none(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def signature(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_nlink)


def path_key(path: str) -> bytes:
    """A path as the index stores it: its bytes (names need not be UTF-8)."""
    return os.fsencode(path)


def key_path(key: bytes) -> str:
    return os.fsdecode(key)
