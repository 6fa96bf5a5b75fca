from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from sessions_app.search import CodeIndex
from sessions_app.search.tokens import words


@dataclass
class WordHashEmbedder:
    """A deterministic embedder for the index's mechanics (each word hashed to a dimension);
    what the packaged model finds is tested with the model itself."""

    name: str = "word-hash"
    dimensions: int = 64

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        rows = []
        for text in texts:
            row = [0.0] * self.dimensions
            for word in words(text):
                row[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimensions] += 1.0
            rows.append(row if any(row) else [1.0] + [0.0] * (self.dimensions - 1))
        return rows


@pytest.fixture
def index(tmp_path: Path) -> CodeIndex:
    return CodeIndex(tmp_path / "index", WordHashEmbedder())
