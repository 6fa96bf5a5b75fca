"""Ranking: BM25 over identifier-aware words (SQLite FTS5), cosine over embeddings (NumPy),
fused by weighted reciprocal rank; and the excerpt and reason of each hit."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sessions_app.search.embedders import Vectors
from sessions_app.search.tokens import query_words, words

# Reciprocal rank fusion (Cormack et al., with their K): score = sum of weight / (K + rank).
# BM25 weighs 1; an embedder's ranking weighs its ``fusion_weight`` (how far its meaning is
# to be trusted over words: bench/retrieval.py measures it), else EMBEDDING_WEIGHT.
RRF_K = 60
BM25_WEIGHT = 1.0
EMBEDDING_WEIGHT = 1.0
EXCERPT_LINES = 3
EXCERPT_WIDTH = 160


def fts_query(query: str) -> str:
    """An FTS5 query matching any of the query's words (each quoted: no operators)."""
    return " OR ".join(f'"{word}"' for word in query_words(query))


def bm25_ranking(
    connection: sqlite3.Connection, query: str, depth: int, path_ok: Callable[[str], bool]
) -> list[int]:
    """Chunk ids by BM25, best first, ``depth`` at most, among paths ``path_ok`` accepts."""
    match = fts_query(query)
    if not match:
        return []
    rows = connection.execute(
        "SELECT chunks.id, chunks.path FROM chunks_fts JOIN chunks ON chunks.id = chunks_fts.rowid "
        "WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts) LIMIT ?",
        (match, depth * 4),
    ).fetchall()
    return [int(chunk_id) for chunk_id, path in rows if path_ok(path)][:depth]


@dataclass
class VectorTable:
    """The chunk vectors a reader holds in memory, reloaded by what changed since."""

    model: str = ""
    generation: str = ""
    ids: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    paths: tuple[str, ...] = ()
    matrix: Vectors = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))

    def ranking(
        self, query_vector: Vectors, depth: int, path_ok: Callable[[str], bool]
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine) best first, ``depth`` at most, among paths ``path_ok`` accepts."""
        if not len(self.ids) or self.matrix.shape[1] != query_vector.shape[0]:
            return []
        scores = self.matrix @ query_vector
        wanted = min(len(scores), depth * 4)
        best = np.argpartition(-scores, wanted - 1)[:wanted]
        best = best[np.argsort(-scores[best])]
        found = [(int(self.ids[i]), float(scores[i])) for i in best if path_ok(self.paths[i])]
        if len(found) < depth and wanted < len(scores):
            order = np.argsort(-scores)
            found = [(int(self.ids[i]), float(scores[i])) for i in order if path_ok(self.paths[i])]
        return found[:depth]


def fuse(rankings: Sequence[tuple[float, Sequence[int]]]) -> list[tuple[int, float]]:
    """Weighted reciprocal rank fusion of (weight, ids best first) lists."""
    scores: dict[int, float] = {}
    for weight, ids in rankings:
        for rank, chunk_id in enumerate(ids):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (RRF_K + rank + 1)
    return sorted(scores.items(), key=lambda item: -item[1])


def excerpt(text: str, start_line: int, query: str) -> tuple[str, list[str]]:
    """A few lines around the chunk's best line (most query words), and the words matched."""
    wanted = set(query_words(query))
    lines = text.splitlines() or [""]
    counts = [len(wanted.intersection(words(line))) for line in lines]
    best = max(range(len(lines)), key=lambda i: (counts[i], -i)) if any(counts) else 0
    if not any(counts):
        best = next((i for i, line in enumerate(lines) if line.strip()), 0)
    first = max(0, best - (EXCERPT_LINES // 2))
    shown = lines[first : first + EXCERPT_LINES]
    body = "\n".join(
        f"{start_line + first + n}: {line[:EXCERPT_WIDTH]}" for n, line in enumerate(shown)
    )
    matched = [word for word in query_words(query) if word in set(words(text))]
    return body, matched


def reason(matched: Sequence[str], similarity: float | None) -> str:
    """Why a hit matched: "words: retry, limit; meaning 0.62"."""
    parts = []
    if matched:
        parts.append("words: " + ", ".join(matched[:8]))
    if similarity is not None:
        parts.append(f"meaning {similarity:.2f}")
    return "; ".join(parts) or "near the top of both rankings"
