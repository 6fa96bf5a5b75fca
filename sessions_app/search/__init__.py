"""Code search for a workspace (issue 38): an index of code-aware chunks ranked by BM25 and
embeddings, and symbol definitions and references, from the text the caller passes.

A library like ``containment``: no Django, no models. The caller (the indexing task, the
tools) passes each file's text as the role may see it; the index never reads a workspace.
"""

from __future__ import annotations

from sessions_app.search.embedders import Embedder, endpoint_embedder, packaged_embedder
from sessions_app.search.index import CodeIndex
from sessions_app.search.results import Hit, IndexProgress, SearchResult, SymbolHit

__all__ = [
    "CodeIndex",
    "Embedder",
    "Hit",
    "IndexProgress",
    "SearchResult",
    "SymbolHit",
    "endpoint_embedder",
    "packaged_embedder",
]
