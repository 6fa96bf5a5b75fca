"""Code-aware chunks and symbol definitions, from one tree-sitter parse per file.

A chunk is a definition (function, method, class, type) small enough to read whole; a larger
one is cut at the definitions it holds, and whatever no definition covers (imports, module
code, a class's fields) is cut into line windows. Markdown is cut at its headings; any other
text into line windows. Grammars come compiled in ``tree-sitter-language-pack`` (0.13, the
last release that ships them in the wheel rather than downloading them at run time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Lines per chunk: a definition up to this is one chunk; windows are this long at most.
MAX_LINES = 60
WINDOW = 40
# Files above this are indexed as text windows (a generated or minified file).
MAX_PARSE_BYTES = 512 * 1024

LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".java": "java",
    ".cs": "csharp",
    ".rs": "rust",
}
_MARKDOWN = (".md", ".markdown", ".mdx", ".rst")
_JS_DEFINITIONS = {
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "abstract_class_declaration",
    "method_definition",
    "interface_declaration",
    "type_alias_declaration",
    "enum_declaration",
}
DEFINITIONS: dict[str, set[str]] = {
    "python": {"function_definition", "class_definition"},
    "javascript": _JS_DEFINITIONS,
    "typescript": _JS_DEFINITIONS,
    "tsx": _JS_DEFINITIONS,
    "go": {"function_declaration", "method_declaration", "type_spec"},
    "java": {
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "method_declaration",
        "constructor_declaration",
    },
    "csharp": {
        "class_declaration",
        "interface_declaration",
        "struct_declaration",
        "enum_declaration",
        "record_declaration",
        "method_declaration",
        "constructor_declaration",
        "property_declaration",
    },
    "rust": {
        "function_item",
        "function_signature_item",
        "struct_item",
        "enum_item",
        "trait_item",
        "impl_item",
        "mod_item",
        "type_item",
        "macro_definition",
    },
}
# ``const retry = () => ...``: a variable holding a function is a definition too.
_FUNCTION_VALUES = {"arrow_function", "function", "function_expression", "generator_function"}
# Chunks, but not definitions of a name (``impl Queue`` adds to Queue, defined elsewhere).
_NOT_SYMBOLS = {"impl_item"}
_HEADING = re.compile(r"^(#{1,6} |\S.*\n[=-]{3,}\s*$)")


@dataclass(frozen=True)
class Chunk:
    """Lines ``start_line``..``end_line`` (1-based, inclusive) and the definition they hold."""

    start_line: int
    end_line: int
    text: str
    name: str = ""


@dataclass(frozen=True)
class Definition:
    """A symbol's definition: its name, its lines and the language it is written in."""

    name: str
    line: int
    end_line: int
    language: str


@dataclass(frozen=True)
class Parsed:
    language: str
    chunks: tuple[Chunk, ...]
    definitions: tuple[Definition, ...]


def language_of(path: str) -> str:
    """The tree-sitter language of ``path`` by its extension; "markdown", or "" for text."""
    lower = path.lower()
    dot = lower.rfind(".")
    extension = lower[dot:] if dot > lower.rfind("/") else ""
    if extension in _MARKDOWN:
        return "markdown"
    return LANGUAGES.get(extension, "")


@lru_cache(maxsize=16)
def parser_for(language: str) -> Any:
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]


def parse(path: str, text: str) -> Parsed:
    """Chunks and definitions of one file's text."""
    lines = text.splitlines()
    language = language_of(path)
    if language == "markdown":
        return Parsed(language, tuple(_sections(lines)), ())
    if not language or len(text) > MAX_PARSE_BYTES:
        return Parsed(language, tuple(_windows(lines, 0, len(lines))), ())
    tree = parser_for(language).parse(text.encode("utf-8", "surrogatepass"))
    definitions: list[tuple[Any, str]] = []
    _collect(tree.root_node, language, definitions)
    covered = [False] * len(lines)
    chunks: list[Chunk] = []
    for node, name in definitions:
        start, end = node.start_point[0], node.end_point[0]
        if end - start + 1 > MAX_LINES or any(covered[start : end + 1]):
            continue  # cut at what it holds (its children come later in the list)
        chunks.append(Chunk(start + 1, end + 1, "\n".join(lines[start : end + 1]), name))
        covered[start : end + 1] = [True] * (end - start + 1)
    chunks.extend(_uncovered(lines, covered))
    chunks.sort(key=lambda chunk: chunk.start_line)
    found = tuple(
        Definition(name, _name_line(node), node.end_point[0] + 1, language)
        for node, name in definitions
        if node.type not in _NOT_SYMBOLS
    )
    return Parsed(language, tuple(chunks), found)


def _collect(node: Any, language: str, out: list[tuple[Any, str]]) -> None:
    """Definitions in document order, outer before inner; an oversized outer one is skipped
    as a chunk so its inner ones become chunks."""
    for child in node.named_children:
        inner = (
            child.child_by_field_name("definition")
            if child.type == "decorated_definition"
            else None
        )
        name = _definition_name(inner or child, language)
        if name:
            out.append((child, name))  # a Python definition with its decorators
        _collect(inner or child, language, out)


def _definition_name(node: Any, language: str) -> str:
    kind = node.type
    if kind in DEFINITIONS[language]:
        named = node.child_by_field_name("name") or node.child_by_field_name("type")
        return _text(named) if named is not None else ""
    if kind == "variable_declarator" and language in ("javascript", "typescript", "tsx"):
        value = node.child_by_field_name("value")
        named = node.child_by_field_name("name")
        if value is not None and value.type in _FUNCTION_VALUES and named is not None:
            return _text(named)
    return ""


def _name_line(node: Any) -> int:
    """The line that names a definition (after a Python definition's decorators)."""
    inner = node.child_by_field_name("definition") or node
    named = inner.child_by_field_name("name") or inner
    return int(named.start_point[0]) + 1


def _text(node: Any) -> str:
    return bytes(node.text or b"").decode("utf-8", "replace")


def _uncovered(lines: list[str], covered: list[bool]) -> list[Chunk]:
    chunks: list[Chunk] = []
    start = None
    for index in range(len(lines) + 1):
        free = index < len(lines) and not covered[index]
        if free and start is None:
            start = index
        elif not free and start is not None:
            chunks.extend(_windows(lines, start, index))
            start = None
    return chunks


def _windows(lines: list[str], start: int, end: int) -> list[Chunk]:
    """Windows of ``WINDOW`` lines over ``lines[start:end]``, trimmed of blank edges."""
    chunks = []
    for first in range(start, end, WINDOW):
        last = min(first + WINDOW, end)
        while first < last and not lines[first].strip():
            first += 1
        while last > first and not lines[last - 1].strip():
            last -= 1
        if first < last:
            chunks.append(Chunk(first + 1, last, "\n".join(lines[first:last])))
    return chunks


def _sections(lines: list[str]) -> list[Chunk]:
    """Markdown cut at its headings (a long section into windows), the heading as name."""
    starts = [0] + [
        i for i in range(1, len(lines)) if _HEADING.match(lines[i] + "\n" + _next(lines, i))
    ]
    chunks = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(lines)
        title = lines[start].lstrip("#").strip() if start < len(lines) else ""
        for window in _windows(lines, start, end):
            chunks.append(Chunk(window.start_line, window.end_line, window.text, title))
    return chunks


def _next(lines: list[str], index: int) -> str:
    return lines[index + 1] if index + 1 < len(lines) else ""
