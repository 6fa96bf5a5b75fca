"""CodeIndex: a workspace's search index in one directory (SQLite in WAL mode).

One writer (the indexing task) and many readers (searches in other processes) at once. The
caller passes each file's text as the role may see it (the one view: secret files never
passed, secrets redacted); the index never reads the workspace itself.
"""

from __future__ import annotations

import hashlib
import logging
import pathlib
import threading
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

import numpy as np

from roles.globs import glob_matches
from sessions_app.search import ranking, store, symbols
from sessions_app.search.chunking import Chunk, Parsed, parse
from sessions_app.search.embedders import Embedder, Vectors, as_unit_vectors, packaged_embedder
from sessions_app.search.results import (
    Hit,
    IndexProgress,
    SearchMode,
    SearchResult,
    SymbolHit,
)
from sessions_app.search.static import StaticMiniLMEmbedder
from sessions_app.search.tokens import words

logger = logging.getLogger(__name__)

# The packaged model runs whole (best recall; about 25-60 chunks a second on two cores) up to
# this many files, a build of minutes; above, its static distillation (thousands a second).
WHOLE_MODEL_MAX_FILES = 3000
# Chunks embedded per call in put_many (one model call amortised over many files).
EMBED_BATCH = 256
# Candidates each ranking contributes to the fusion, per hit asked for.
DEPTH_PER_HIT = 5
MIN_DEPTH = 50


class CodeIndex:
    """A workspace's code index: chunks ranked by BM25 and embeddings, and symbols.

    ``embedder`` None is the packaged offline model (loaded on first use): the whole encoder
    for a workspace of up to ``WHOLE_MODEL_MAX_FILES`` files, its static distillation above
    (``begin`` chooses by the build's size and records it, so readers use the same)."""

    def __init__(self, index_dir: pathlib.Path, embedder: Embedder | None = None) -> None:
        self.index_dir = pathlib.Path(index_dir)
        self._embedder = embedder
        self._chooses_model = embedder is None
        self._lock = threading.RLock()
        self._db = store.connect(self.index_dir)
        self._vectors = ranking.VectorTable()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._lock:
                chosen = store.meta_get(self._db, "packaged_model")
            self._embedder = StaticMiniLMEmbedder() if chosen == "static" else packaged_embedder()
        return self._embedder

    # Writing (one writer at a time) ------------------------------------------------------

    def begin(self, files_total: int) -> None:
        """Start a build of ``files_total`` files; searches keep answering from the entries
        already indexed until each is replaced."""
        with self._lock, store.writing(self._db):
            store.meta_set(
                self._db, state="building", files_indexed=0, files_total=files_total, error=""
            )
            if self._chooses_model:
                large = files_total > WHOLE_MODEL_MAX_FILES
                store.meta_set(self._db, packaged_model="static" if large else "whole")
                self._embedder = None

    def put(self, path: str, text: str) -> None:
        """(Re)index one file's text; nothing to do when its content is unchanged."""
        self.put_many([(path, text)])

    def put_many(self, items: Iterable[tuple[str, str]]) -> None:
        """Index many files, embedding their chunks in batches."""
        pending: list[tuple[str, str, str, Parsed]] = []
        chunk_count = unchanged = 0
        for path, text in items:
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            if self._unchanged(path, digest):
                unchanged += 1
                continue
            parsed = parse(path, text)
            pending.append((path, text, digest, parsed))
            chunk_count += len(parsed.chunks)
            if chunk_count >= EMBED_BATCH or unchanged >= EMBED_BATCH:
                self._write(pending, unchanged)
                pending, chunk_count, unchanged = [], 0, 0
        if pending or unchanged:
            self._write(pending, unchanged)

    def remove(self, path: str) -> None:
        """Forget ``path`` (deleted, or no longer in the role's view)."""
        with self._lock, store.writing(self._db):
            self._delete(path)
            store.bump_generation(self._db)

    def finish(self) -> None:
        """The build is complete: state ready."""
        with self._lock, store.writing(self._db):
            (count,) = self._db.execute("SELECT count(*) FROM files").fetchone()
            store.meta_set(self._db, state="ready", files_indexed=count, files_total=count)

    def fail(self, error: str) -> None:
        """The build stopped with ``error``; what was indexed still answers searches."""
        with self._lock, store.writing(self._db):
            store.meta_set(self._db, state="failed", error=error)

    def _unchanged(self, path: str, digest: str) -> bool:
        with self._lock:
            row = self._db.execute(
                "SELECT hash, model FROM files WHERE path = ?", (path,)
            ).fetchone()
        return row is not None and row[0] == digest and row[1] == self.embedder.name

    def _bump_count(self, files: int) -> None:
        if store.meta_get(self._db, "state") == "building":
            self._db.execute(
                "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + ? AS TEXT) "
                "WHERE key = 'files_indexed'",
                (files,),
            )

    def _write(self, pending: list[tuple[str, str, str, Parsed]], unchanged: int = 0) -> None:
        """Write ``pending`` files in one transaction, counting ``unchanged`` ones too."""
        texts = [
            embedding_text(path, chunk) for path, _, _, parsed in pending for chunk in parsed.chunks
        ]
        vectors = self._embed(texts)
        position = 0
        with self._lock, store.writing(self._db):
            for path, text, digest, parsed in pending:
                self._delete(path)
                self._db.execute(
                    "INSERT INTO files (path, hash, language, model) VALUES (?, ?, ?, ?)",
                    (path, digest, parsed.language, self.embedder.name),
                )
                for chunk in parsed.chunks:
                    vector = vectors[position].tobytes() if len(vectors) else None
                    position += 1
                    cursor = self._db.execute(
                        "INSERT INTO chunks (path, start_line, end_line, name, text, vector) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (path, chunk.start_line, chunk.end_line, chunk.name, chunk.text, vector),
                    )
                    self._db.execute(
                        "INSERT INTO chunks_fts (rowid, words) VALUES (?, ?)",
                        (cursor.lastrowid, " ".join(words(f"{path}\n{chunk.text}"))),
                    )
                symbols.insert_definitions(self._db, path, text, parsed)
            self._bump_count(len(pending) + unchanged)
            if pending:
                store.bump_generation(self._db)

    def _embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        raw = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        return as_unit_vectors(raw, raw.shape[-1])

    def _delete(self, path: str) -> None:
        self._db.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE path = ?)",
            (path,),
        )
        self._db.execute("DELETE FROM chunks WHERE path = ?", (path,))
        self._db.execute("DELETE FROM definitions WHERE path = ?", (path,))
        self._db.execute("DELETE FROM files WHERE path = ?", (path,))

    # Reading (any process, any time) -----------------------------------------------------

    def progress(self) -> IndexProgress:
        """How far the index got (a few rows read; safe while another process writes)."""
        with self._lock:
            return store.read_progress(self._db)

    def paths(self) -> set[str]:
        """The paths indexed (for an incremental sync against the workspace)."""
        with self._lock:
            return {path for (path,) in self._db.execute("SELECT path FROM files")}

    def search(
        self,
        query: str,
        *,
        globs: Sequence[str] = (),
        limit: int = 10,
        mode: SearchMode = "hybrid",
    ) -> SearchResult:
        """The chunks that best answer ``query``, among paths matching any of ``globs``."""
        path_ok = _path_filter(tuple(globs))
        depth = max(MIN_DEPTH, limit * DEPTH_PER_HIT)
        rankings: list[tuple[float, list[int]]] = []
        similarity: dict[int, float] = {}
        with self._lock:
            progress = store.read_progress(self._db)
            if mode in ("hybrid", "bm25"):
                rankings.append(
                    (ranking.BM25_WEIGHT, ranking.bm25_ranking(self._db, query, depth, path_ok))
                )
            if mode in ("hybrid", "embedding") and query.strip():
                found = self._meaning_ranking(query, depth, path_ok, fallback=mode == "hybrid")
                similarity = dict(found)
                weight = getattr(self.embedder, "fusion_weight", ranking.EMBEDDING_WEIGHT)
                rankings.append((weight, [chunk_id for chunk_id, _ in found]))
            fused = ranking.fuse(rankings)[:limit]
            hits = tuple(self._hit(chunk_id, score, query, similarity) for chunk_id, score in fused)
        return SearchResult(hits=tuple(hit for hit in hits if hit is not None), progress=progress)

    def search_code(
        self, name: str, *, globs: Sequence[str] = (), limit: int = 50
    ) -> tuple[SymbolHit, ...]:
        """Definitions whose name matches ``name``: exact, then prefix, then substring
        (case-insensitive)."""
        with self._lock:
            return symbols.search_definitions(self._db, name, _path_filter(tuple(globs)), limit)

    def find_references(
        self, symbol: str, *, globs: Sequence[str] = (), limit: int = 100
    ) -> tuple[SymbolHit, ...]:
        """``symbol``'s definitions, then the places that use it (identifiers in code, not
        comments or strings; whole words in other text)."""
        with self._lock:
            return symbols.references(self._db, symbol, _path_filter(tuple(globs)), limit)

    def _meaning_ranking(
        self, query: str, depth: int, path_ok: Callable[[str], bool], *, fallback: bool
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine) best first; with ``fallback`` (hybrid), none when the embedder
        fails (an endpoint down), so the search still answers by its words."""
        table = self._vector_table()
        if not len(table.ids):
            return []
        try:
            query_vector = self._embed([query])[0]
        except Exception:
            if not fallback:
                raise
            logger.warning("search.embedding_failed", exc_info=True)
            return []
        return table.ranking(query_vector, depth, path_ok)

    def _hit(
        self, chunk_id: int, score: float, query: str, similarity: dict[int, float]
    ) -> Hit | None:
        row = self._db.execute(
            "SELECT path, start_line, end_line, text FROM chunks WHERE id = ?", (chunk_id,)
        ).fetchone()
        if row is None:
            return None  # replaced since the ranking was read
        path, start_line, end_line, text = row
        body, matched = ranking.excerpt(text, start_line, query)
        return Hit(
            path=path,
            start_line=start_line,
            end_line=end_line,
            excerpt=body,
            score=round(score, 6),
            why=ranking.reason(matched, similarity.get(chunk_id)),
        )

    def _vector_table(self) -> ranking.VectorTable:
        """The vectors of this index, reloaded only in what changed since the last search."""
        generation = store.meta_get(self._db, "generation")
        table = self._vectors
        if table.generation == generation and table.model == self.embedder.name:
            return table
        if table.model != self.embedder.name:
            table = ranking.VectorTable(model=self.embedder.name)
        present = np.fromiter(
            (row[0] for row in self._db.execute("SELECT id FROM chunks WHERE vector IS NOT NULL")),
            dtype=np.int64,
        )
        keep = np.isin(table.ids, present)
        newest = int(table.ids.max()) if len(table.ids) else 0
        rows = self._db.execute(
            "SELECT chunks.id, chunks.path, chunks.vector FROM chunks JOIN files USING (path) "
            "WHERE chunks.id > ? AND chunks.vector IS NOT NULL AND files.model = ? "
            "ORDER BY chunks.id",
            (newest, self.embedder.name),
        ).fetchall()
        ids = np.array([row[0] for row in rows], dtype=np.int64)
        added = [np.frombuffer(row[2], dtype=np.float32) for row in rows]
        matrix = table.matrix[keep] if len(table.ids) else np.zeros((0, 0), np.float32)
        if added:
            new = np.vstack(added)
            matrix = np.vstack([matrix, new]) if len(matrix) else new
        kept_paths = tuple(p for p, k in zip(table.paths, keep, strict=True) if k)
        self._vectors = ranking.VectorTable(
            model=self.embedder.name,
            generation=generation,
            ids=np.concatenate([table.ids[keep], ids]),
            paths=kept_paths + tuple(row[1] for row in rows),
            matrix=matrix,
        )
        return self._vectors


def embedding_text(path: str, chunk: Chunk) -> str:
    """What a chunk's vector is made from: where it is, what it defines, then its text."""
    head = f"{path} {chunk.name}".strip()
    return f"{head}\n{chunk.text}"


@lru_cache(maxsize=64)
def _path_filter(globs: tuple[str, ...]) -> Callable[[str], bool]:
    if not globs:
        return _any_path

    @lru_cache(maxsize=65536)
    def matches(path: str) -> bool:
        return any(glob_matches(glob, path) for glob in globs)

    return matches


def _any_path(path: str) -> bool:
    return True
