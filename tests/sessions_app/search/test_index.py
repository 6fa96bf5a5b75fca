from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Sequence
from pathlib import Path

from sessions_app.search import CodeIndex, IndexProgress
from tests.sessions_app.search.conftest import WordHashEmbedder
from tests.sessions_app.search.samples import MARKDOWN, SOURCES

ROOT = Path(__file__).resolve().parents[3]


def build(index: CodeIndex, files: dict[str, str]) -> None:
    index.begin(len(files))
    index.put_many(files.items())
    index.finish()


def sample_files() -> dict[str, str]:
    return {path: text for path, (text, _) in SOURCES.items()} | {"docs/guide.md": MARKDOWN}


def test_search_finds_identifier_parts_and_says_why(index: CodeIndex) -> None:
    build(index, sample_files())
    result = index.search("compute tax", limit=3)
    assert result.progress == IndexProgress("ready", 9, 9)
    top = result.hits[0]
    assert (top.path, top.start_line, top.end_line) == ("src/Invoice.java", 1, 9)
    assert "words: compute, tax" in top.why and "meaning" in top.why
    assert "computeTax" in top.excerpt and len(top.excerpt.splitlines()) <= 3


def test_bm25_and_embedding_modes_rank_alone(index: CodeIndex) -> None:
    build(index, sample_files())
    bm25 = index.search("install", mode="bm25").hits
    assert bm25[0].path == "docs/guide.md" and "meaning" not in bm25[0].why
    meaning = index.search("install", mode="embedding").hits
    assert meaning and all("meaning" in hit.why for hit in meaning)


def test_a_changed_file_is_found_by_the_next_search_and_a_removed_one_is_gone(
    index: CodeIndex,
) -> None:
    build(index, sample_files())
    assert not index.search("refund_payment", mode="bm25").hits
    index.put("app/retry.py", "def refund_payment(order):\n    return order.total\n")
    hits = index.search("refund payment").hits
    assert [(hit.path, hit.start_line) for hit in hits[:1]] == [("app/retry.py", 1)]
    assert not any("retry_call" in hit.excerpt for hit in index.search("retry call").hits)
    index.remove("app/retry.py")
    assert all(hit.path != "app/retry.py" for hit in index.search("refund payment").hits)
    assert "app/retry.py" not in index.paths()
    assert not index.search_code("refund_payment")


def test_an_unchanged_file_is_not_indexed_again(tmp_path: Path) -> None:
    class Counting(WordHashEmbedder):
        calls = 0

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            Counting.calls += 1
            return super().embed(texts)

    index = CodeIndex(tmp_path / "index", Counting())
    build(index, sample_files())
    calls = Counting.calls
    build(index, sample_files())
    assert Counting.calls == calls
    assert index.progress() == IndexProgress("ready", 9, 9)


def test_globs_keep_only_matching_paths(index: CodeIndex) -> None:
    build(index, sample_files())
    hits = index.search("item cart user queue", globs=["web/**"], limit=10).hits
    assert hits and {hit.path for hit in hits} <= {"web/cart.js", "web/user.ts", "web/view.tsx"}
    assert {hit.path for hit in index.search("queue", globs=["src/*.rs"]).hits} == {"src/queue.rs"}
    assert not index.search("queue", globs=["nothing/**"]).hits
    assert [h.path for h in index.search_code("Queue", globs=["src/**"])] == ["src/queue.rs"]
    assert not index.find_references("Queue", globs=["web/**"])


def test_progress_while_building_is_read_by_another_index_on_the_same_directory(
    tmp_path: Path,
) -> None:
    writer = CodeIndex(tmp_path / "index", WordHashEmbedder())
    reader = CodeIndex(tmp_path / "index", WordHashEmbedder())
    assert reader.progress() == IndexProgress("missing", 0, 0)
    writer.begin(3)
    writer.put("a.py", "def alpha():\n    pass\n")
    assert reader.progress() == IndexProgress("building", 1, 3)
    result = reader.search("alpha")
    assert result.progress == IndexProgress("building", 1, 3) and result.hits[0].path == "a.py"
    writer.fail("disk full")
    assert reader.progress() == IndexProgress("failed", 1, 3, "disk full")
    assert reader.search("alpha").hits  # what was indexed still answers
    writer.begin(2)
    writer.put_many([("a.py", "def alpha():\n    pass\n"), ("b.py", "def beta():\n    pass\n")])
    writer.finish()
    assert reader.progress() == IndexProgress("ready", 2, 2)


def test_search_code_matches_exact_then_prefix_then_substring(index: CodeIndex) -> None:
    build(index, sample_files())
    index.put("lib/more.py", "def drain():\n    pass\n\ndef predrain_check():\n    pass\n")
    found = index.search_code("drain")
    assert [hit.symbol for hit in found] == ["drain", "Drain", "drain_all", "predrain_check"]
    assert found[2] == found[2].__class__(
        "src/queue.rs", 12, 12, "definition", "drain_all", "rust", "fn drain_all(&mut self);"
    )
    assert [hit.symbol for hit in index.search_code("BACKOFF")] == ["Backoff"]


def test_find_references_lists_definitions_then_uses_in_code_only(index: CodeIndex) -> None:
    build(index, sample_files())
    index.put(
        "app/use.py",
        "from app.retry import retry_call\n\n# retry_call is mentioned here only\n"
        'note = "retry_call in a string"\nresult = retry_call(print)\n',
    )
    found = index.find_references("retry_call")
    assert [(hit.kind, hit.path, hit.line) for hit in found] == [
        ("definition", "app/retry.py", 7),
        ("reference", "app/use.py", 1),
        ("reference", "app/use.py", 5),
    ]
    assert found[2].excerpt == "result = retry_call(print)" and found[2].language == "python"
    go = index.find_references("Listen")
    assert [(hit.kind, hit.line) for hit in go] == [("definition", 7), ("reference", 13)]


def test_a_search_in_another_process_answers_while_the_writer_writes(tmp_path: Path) -> None:
    directory = tmp_path / "index"
    writer = CodeIndex(directory, WordHashEmbedder())
    writer.begin(400)
    writer.put("seed.py", "def widget_seed():\n    pass\n")
    reader_script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from sessions_app.search import CodeIndex
        from tests.sessions_app.search.conftest import WordHashEmbedder
        index = CodeIndex(Path({str(directory)!r}), WordHashEmbedder())
        seen = 0
        for _ in range(60):
            result = index.search("widget", limit=5)
            assert result.hits, result
            assert result.progress.state == "building"
            seen = max(seen, result.progress.files_indexed)
        print("ok", seen)
        """
    )
    reader = subprocess.Popen(
        [sys.executable, "-c", reader_script], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )

    def write() -> None:
        for n in range(400):
            writer.put(f"pkg/m{n}.py", f"def widget_{n}():\n    return {n}\n")

    thread = threading.Thread(target=write)
    thread.start()
    out, _ = reader.communicate(timeout=120)
    thread.join()
    assert reader.returncode == 0 and out.startswith("ok")
    writer.finish()
    assert writer.progress() == IndexProgress("ready", 401, 401)
