from __future__ import annotations

import pytest

from sessions_app.search.chunking import MAX_LINES, WINDOW, language_of, parse
from tests.sessions_app.search.samples import MARKDOWN, SOURCES


@pytest.mark.parametrize("path", sorted(SOURCES))
def test_chunks_are_the_definitions_of_each_language(path: str) -> None:
    text, names = SOURCES[path]
    parsed = parse(path, text)
    assert parsed.language == language_of(path) != ""
    assert names <= {found.name for found in parsed.definitions}
    lines = text.splitlines()
    for chunk in parsed.chunks:  # every chunk is the file's own lines
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    assert {chunk.name for chunk in parsed.chunks} & names


def test_a_python_definition_keeps_its_decorator() -> None:
    text, _ = SOURCES["app/retry.py"]
    chunk = next(c for c in parse("app/retry.py", text).chunks if c.name == "retry_call")
    assert chunk.text.startswith("@decorated\ndef retry_call")


def test_a_large_class_is_cut_at_its_methods() -> None:
    methods = "".join(f"    def m{n}(self):\n" + "        x = 1\n" * 10 for n in range(10))
    parsed = parse("big.py", "class Big:\n" + methods)
    names = [chunk.name for chunk in parsed.chunks]
    assert "Big" not in names and {f"m{n}" for n in range(10)} <= set(names)
    assert all(chunk.end_line - chunk.start_line < MAX_LINES for chunk in parsed.chunks)


def test_markdown_is_cut_at_headings() -> None:
    parsed = parse("docs/guide.md", MARKDOWN)
    assert [chunk.name for chunk in parsed.chunks] == ["Guide", "Install", "Configure"]
    assert parsed.chunks[1].text == "## Install\n\nRun make install."


def test_other_text_is_cut_into_windows() -> None:
    text = "\n".join(f"line {n}" for n in range(100))
    parsed = parse("notes.txt", text)
    assert parsed.language == "" and parsed.definitions == ()
    assert [(c.start_line, c.end_line) for c in parsed.chunks] == [
        (1, WINDOW),
        (WINDOW + 1, 2 * WINDOW),
        (2 * WINDOW + 1, 100),
    ]
