"""Code search (issue 38): retrieval quality and what the index costs, in the same run.

- Recall@5 of BM25 alone, embeddings alone and hybrid (fused) on acode's own source at a
  fixed commit (``git archive``; bench/data/retrieval_questions.json: 40 questions written
  from the code, each with the files that answer it), for each packaged embedder candidate:
  all-MiniLM-L6-v2 run whole (the encoder per chunk) and its static distillation;
- index build time and peak memory for a generated 50,000-file workspace (real code: this
  venv's Python sources, cut to 2 KiB, cycled), with the default embedder, and what the
  whole encoder would take for it (its measured rate times the chunks);
- search latency p50/p95 over that index (target p95 < 200 ms), from a reader that did not
  build it (as a search in another process would).

Recall@5 of a question: the share of its files among the files of the first five hits.

    python bench/retrieval.py   # ACODE_BENCH_SEARCH_FILES=50000 by default
"""

from __future__ import annotations

import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _report import record
from _setup import ROOT

from sessions_app.search import CodeIndex, Embedder
from sessions_app.search.embedders import MiniLMEmbedder
from sessions_app.search.results import SearchMode
from sessions_app.search.static import StaticMiniLMEmbedder, token_table

QUESTIONS = ROOT / "bench" / "data" / "retrieval_questions.json"
COMMIT = "c24eace752aba782944685d3fcc88c9f09d08e27"
PARTS = ("acode/", "audit/", "roles/", "sessions_app/")
LARGE = int(os.environ.get("ACODE_BENCH_SEARCH_FILES", "50000"))
LATENCY_TARGET_MS = 200.0
MODES: tuple[SearchMode, ...] = ("bm25", "embedding", "hybrid")


def corpus() -> list[tuple[str, str]] | None:
    """acode's source at ``COMMIT`` (None when this clone lacks the commit)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", COMMIT, *PARTS],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        return None
    files = []
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        for member in tar.getmembers():
            name = member.name
            if member.isfile() and name.endswith((".py", ".md")) and "/migrations/" not in name:
                data = tar.extractfile(member)
                if data is not None:
                    files.append((name, data.read().decode("utf-8", "replace")))
    return files


def recall_at_5(index: CodeIndex, questions: list[dict[str, object]], mode: SearchMode) -> float:
    scores = []
    for question in questions:
        hits = index.search(str(question["q"]), limit=5, mode=mode).hits
        wanted = set(question["files"])  # type: ignore[call-overload]
        scores.append(len(wanted & {hit.path for hit in hits}) / len(wanted))
    return statistics.mean(scores)


def build(index: CodeIndex, files: Sequence[tuple[str, str]]) -> float:
    started = time.perf_counter()
    index.begin(len(files))
    index.put_many(files)
    index.finish()
    return time.perf_counter() - started


def chunk_count(index_dir: Path) -> int:
    import sqlite3

    with sqlite3.connect(index_dir / "index.sqlite3") as db:
        return int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])


def quality(root: Path, files: list[tuple[str, str]], questions: list[dict[str, object]]) -> str:
    """Recall@5 per candidate and mode; returns the name of the better embedder."""
    candidates: list[Embedder] = [MiniLMEmbedder(), StaticMiniLMEmbedder()]
    print(f"corpus: {len(files)} files of acode at {COMMIT[:12]}, {len(questions)} questions")
    print(f"{'embedder':28} {'build':>8} {'chunks/s':>9}  " + "  ".join(f"{m:>9}" for m in MODES))
    best, best_recall = "", -1.0
    for embedder in candidates:
        embedder.embed(["warm up"])  # loads the model (and distils the static table once)
        directory = root / f"quality-{embedder.name}"
        index = CodeIndex(directory, embedder)
        seconds = build(index, files)
        chunks = chunk_count(directory)
        recalls = {mode: recall_at_5(index, questions, mode) for mode in MODES}
        for mode, value in recalls.items():
            if mode != "bm25" or embedder is candidates[0]:
                record(f"Recall@5 {mode} ({embedder.name})", value, "ratio",
                       higher_is_better=True, baseline=recalls["bm25"] if mode != "bm25" else None)  # fmt: skip
        record(f"build {len(files)} files ({embedder.name})", seconds, "s",
               note=f"{chunks} chunks, {chunks / seconds:.0f} chunks/s")  # fmt: skip
        print(f"{embedder.name:28} {seconds:7.1f}s {chunks / seconds:9.0f}  "
              + "  ".join(f"{recalls[m]:9.3f}" for m in MODES))  # fmt: skip
        rates[embedder.name] = chunks / seconds
        if recalls["hybrid"] > best_recall:
            best, best_recall = embedder.name, recalls["hybrid"]
        if recalls["hybrid"] <= recalls["bm25"]:
            print(f"MISS hybrid does not beat BM25 alone with {embedder.name}")
    return best


rates: dict[str, float] = {}


def sources() -> list[str]:
    found = []
    for path in sorted(Path(sys.prefix).rglob("*.py"))[:4000]:
        try:
            found.append(path.read_text("utf-8", "replace")[:2048])
        except OSError:
            continue
    return found or ["def f(x):\n    return x\n" * 40]


def large(root: Path, questions: list[dict[str, object]]) -> None:
    bodies = sources()
    files = [
        (f"src/pkg{n // 100:04d}/m{n % 100:02d}.py", bodies[n % len(bodies)]) for n in range(LARGE)
    ]
    directory = root / "large"
    embedder = StaticMiniLMEmbedder()
    token_table()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    seconds = build(CodeIndex(directory, embedder), files)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    chunks = chunk_count(directory)
    size = sum(p.stat().st_size for p in directory.iterdir()) / 1e6
    record(f"index build, {LARGE} files ({embedder.name})", seconds, "s",
           note=f"{chunks} chunks; index {size:.0f} MB")  # fmt: skip
    record(f"index build peak memory growth, {LARGE} files", grown, "MB")
    whole = rates.get(MiniLMEmbedder().name)
    print(f"build {LARGE} files: {seconds:.0f}s, {chunks} chunks, peak memory +{grown:.0f} MB, "
          f"index {size:.0f} MB")  # fmt: skip
    if whole:
        estimate = chunks / whole
        record(f"estimated build, {LARGE} files, whole encoder", estimate, "s",
               note=f"{chunks} chunks at {whole:.0f} chunks/s (measured above)")  # fmt: skip
        print(
            f"  the whole encoder would take about {estimate / 60:.0f} min ({whole:.0f} chunks/s)"
        )
    reader = CodeIndex(directory, embedder)
    started = time.perf_counter()
    reader.search("warm up", limit=10)
    first = (time.perf_counter() - started) * 1000
    latencies = []
    for question in questions * 2:
        started = time.perf_counter()
        reader.search(str(question["q"]), limit=10)
        latencies.append((time.perf_counter() - started) * 1000)
    latencies.sort()
    p50 = statistics.median(latencies)
    p95 = latencies[int(len(latencies) * 0.95) - 1]
    record(f"first search, {LARGE} files (loads the vectors)", first, "ms")
    record(f"search p50, {LARGE} files (hybrid)", p50, "ms")
    record(f"search p95, {LARGE} files (hybrid)", p95, "ms", target=LATENCY_TARGET_MS)
    ok = "OK  " if p95 <= LATENCY_TARGET_MS else "MISS"
    print(f"{ok} search over {LARGE} files: p50 {p50:.0f} ms, p95 {p95:.0f} ms "
          f"(target p95 < {LATENCY_TARGET_MS:.0f}); first search {first:.0f} ms")  # fmt: skip


def main() -> None:
    files = corpus()
    if files is None:
        print(f"MISS this clone lacks commit {COMMIT[:12]} (the corpus); nothing measured")
        return
    questions = json.loads(QUESTIONS.read_text())["questions"]
    with tempfile.TemporaryDirectory(prefix="acode-bench-search-") as tmp:
        root = Path(tmp)
        best = quality(root, files, questions)
        print(f"best hybrid Recall@5: {best}")
        large(root, questions)


if __name__ == "__main__":
    main()
