"""What a search returns: hits with the reason they matched, and how far the index got."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

IndexState = Literal["missing", "building", "ready", "failed"]
SearchMode = Literal["hybrid", "bm25", "embedding"]
SymbolKind = Literal["definition", "reference"]


@dataclass(frozen=True)
class Hit:
    """One ranked chunk: a file's line range (1-based, inclusive), a short excerpt around
    its best line (a few lines, each as "N: text" with its line number), the fused score
    and ``why`` ("words: retry, limit; meaning 0.62")."""

    path: str
    start_line: int
    end_line: int
    excerpt: str
    score: float
    why: str


@dataclass(frozen=True)
class IndexProgress:
    """How far the index got: ``files_indexed`` of ``files_total`` in the current build."""

    state: IndexState
    files_indexed: int
    files_total: int
    error: str = ""


@dataclass(frozen=True)
class SearchResult:
    """The hits of one search and the index's progress when it ran (a search during a
    build answers from what is indexed so far and says how far that is)."""

    hits: tuple[Hit, ...]
    progress: IndexProgress


@dataclass(frozen=True)
class SymbolHit:
    """A definition or a reference of a symbol, from the code-aware parse."""

    path: str
    line: int
    end_line: int
    kind: SymbolKind
    symbol: str
    language: str
    excerpt: str
