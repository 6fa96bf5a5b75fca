"""Symbols: definitions stored at indexing, references found at query time from the chunks
that hold the word, parsed again so only identifiers count (not comments or strings)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from typing import Any

from sessions_app.search.chunking import Parsed, parser_for
from sessions_app.search.results import SymbolHit

EXCERPT_WIDTH = 200
# Leaf node types that name something, across the grammars chunking knows.
_IDENTIFIER_SUFFIXES = ("identifier", "constant")


def insert_definitions(
    connection: sqlite3.Connection, path: str, text: str, parsed: Parsed
) -> None:
    lines = text.splitlines()
    connection.executemany(
        "INSERT INTO definitions (path, name, name_lower, line, end_line, language, excerpt) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                path,
                found.name,
                found.name.lower(),
                found.line,
                found.end_line,
                found.language,
                _line(lines, found.line),
            )
            for found in parsed.definitions
        ],
    )


def search_definitions(
    connection: sqlite3.Connection, name: str, path_ok: Callable[[str], bool], limit: int
) -> tuple[SymbolHit, ...]:
    wanted = name.strip().lower()
    if not wanted:
        return ()
    pattern = _like(wanted)
    rows = connection.execute(
        "SELECT path, line, end_line, name, language, excerpt, "
        "CASE WHEN name_lower = ? THEN 0 WHEN name_lower LIKE ? ESCAPE '\\' THEN 1 ELSE 2 END "
        "AS tier FROM definitions WHERE name_lower LIKE ? ESCAPE '\\' "
        "ORDER BY tier, length(name), path, line",
        (wanted, pattern + "%", "%" + pattern + "%"),
    )
    found: list[SymbolHit] = []
    for path, line, end_line, symbol, language, excerpt, _ in rows:
        if path_ok(path):
            found.append(SymbolHit(path, line, end_line, "definition", symbol, language, excerpt))
            if len(found) >= limit:
                break
    return tuple(found)


def references(
    connection: sqlite3.Connection, symbol: str, path_ok: Callable[[str], bool], limit: int
) -> tuple[SymbolHit, ...]:
    symbol = symbol.strip()
    if not symbol:
        return ()
    rows = connection.execute(
        "SELECT path, line, end_line, name, language, excerpt FROM definitions "
        "WHERE name = ? ORDER BY path, line",
        (symbol,),
    ).fetchall()
    found = [
        SymbolHit(path, line, end_line, "definition", name, language, excerpt)
        for path, line, end_line, name, language, excerpt in rows
        if path_ok(path)
    ][:limit]
    seen = {(hit.path, hit.line) for hit in found}
    chunks = connection.execute(
        "SELECT chunks.path, chunks.start_line, chunks.text, files.language FROM chunks_fts "
        "JOIN chunks ON chunks.id = chunks_fts.rowid JOIN files ON files.path = chunks.path "
        "WHERE chunks_fts MATCH ? ORDER BY chunks.path, chunks.start_line",
        ('"' + symbol.lower().replace('"', "") + '"',),
    )
    for path, start_line, text, language in chunks:
        if len(found) >= limit:
            break
        if not path_ok(path):
            continue
        lines = text.splitlines()
        for offset in _uses(text, symbol, language):
            line = start_line + offset
            if (path, line) in seen:
                continue
            seen.add((path, line))
            excerpt = _line(lines, offset + 1)
            found.append(SymbolHit(path, line, line, "reference", symbol, language, excerpt))
            if len(found) >= limit:
                break
    return tuple(found)


def _uses(text: str, symbol: str, language: str) -> list[int]:
    """0-based lines of ``text`` where ``symbol`` is used: identifier nodes in a language
    tree-sitter parses, whole words elsewhere."""
    if language and language != "markdown":
        tree = parser_for(language).parse(text.encode("utf-8", "surrogatepass"))
        target = symbol.encode("utf-8")
        lines: list[int] = []
        _identifier_lines(tree.root_node, target, lines)
        return sorted(set(lines))
    word = re.compile(r"(?<![\w])" + re.escape(symbol) + r"(?![\w])")
    return [n for n, line in enumerate(text.splitlines()) if word.search(line)]


def _identifier_lines(node: Any, target: bytes, out: list[int]) -> None:
    if node.child_count == 0:
        if node.type.endswith(_IDENTIFIER_SUFFIXES) and node.text == target:
            out.append(node.start_point[0])
        return
    for child in node.children:
        _identifier_lines(child, target, out)


def _line(lines: list[str], number: int) -> str:
    return lines[number - 1].strip()[:EXCERPT_WIDTH] if 0 < number <= len(lines) else ""


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
