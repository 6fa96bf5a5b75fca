"""The index's SQLite file: schema, connection and progress (one writer, many readers, WAL)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sessions_app.search.results import IndexProgress, IndexState

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, hash TEXT NOT NULL, language TEXT NOT NULL, model TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, name TEXT NOT NULL, text TEXT NOT NULL, vector BLOB
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks (path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5 (
    words, tokenize = "unicode61 tokenchars '_'"
);
CREATE TABLE IF NOT EXISTS definitions (
    path TEXT NOT NULL, name TEXT NOT NULL, name_lower TEXT NOT NULL, line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, language TEXT NOT NULL, excerpt TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS definitions_name ON definitions (name_lower);
CREATE INDEX IF NOT EXISTS definitions_path ON definitions (path);
"""
DATABASE = "index.sqlite3"


def connect(index_dir: Path) -> sqlite3.Connection:
    """The index's database in ``index_dir`` (created), in WAL mode so searches in other
    processes read while the one writer writes."""
    index_dir.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(
        index_dir / DATABASE, timeout=30, check_same_thread=False, isolation_level=None
    )
    connection.execute("PRAGMA busy_timeout = 30000")
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")
    connection.executescript(SCHEMA)
    return connection


@contextmanager
def writing(connection: sqlite3.Connection) -> Iterator[None]:
    """One write transaction: readers see all of it or none of it (a file's old chunks until
    its new ones are in). IMMEDIATE takes the write lock first, so two writers queue."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def meta_get(connection: sqlite3.Connection, key: str, default: str = "") -> str:
    row = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row else default


def meta_set(connection: sqlite3.Connection, **values: object) -> None:
    connection.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [(key, str(value)) for key, value in values.items()],
    )


def bump_generation(connection: sqlite3.Connection) -> None:
    """Mark a change of content, so readers reload what they cache (inside the write)."""
    connection.execute(
        "INSERT INTO meta (key, value) VALUES ('generation', '1') ON CONFLICT (key) "
        "DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
    )


def read_progress(connection: sqlite3.Connection) -> IndexProgress:
    rows = dict(
        connection.execute(
            "SELECT key, value FROM meta WHERE key IN "
            "('state', 'files_indexed', 'files_total', 'error')"
        ).fetchall()
    )
    state: IndexState = rows.get("state", "missing")
    return IndexProgress(
        state=state,
        files_indexed=int(rows.get("files_indexed", 0)),
        files_total=int(rows.get("files_total", 0)),
        error=str(rows.get("error", "")),
    )
