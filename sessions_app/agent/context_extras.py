"""What a writing or reviewing role's context gains beyond files (spec "Context Management
by Role"): for a role that writes, the signatures of the interfaces its files use and a
few lines of a neighbouring file as a style example; for a role that reviews, the
project's lint and style rules. Signatures come from tree-sitter (``def``/``class``
lines and the first line of their docstring or comment, nothing of the bodies).
Each section is plain text; the context builder marks it as workspace data and keeps it
within budget.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from sessions_app.agent.selection import read_workspace_text

GRAMMARS = {".py": "python", ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript",
            ".ts": "typescript", ".tsx": "tsx", ".go": "go", ".java": "java", ".cs": "csharp"}  # fmt: skip
DEFINITIONS = frozenset(
    {"function_definition", "class_definition", "function_declaration", "class_declaration",
     "method_definition", "method_declaration", "interface_declaration", "type_alias_declaration",
     "constructor_declaration", "enum_declaration", "struct_declaration", "record_declaration",
     "type_declaration", "abstract_class_declaration", "generator_function_declaration"}
)  # fmt: skip
CONTAINERS = frozenset(
    {"module", "program", "source_file", "compilation_unit", "decorated_definition",
     "export_statement", "namespace_declaration", "file_scoped_namespace_declaration",
     "declaration_list", "class_body", "block", "interface_body", "enum_body"}
)  # fmt: skip
OPENS_SCOPE = frozenset({"class_definition", "class_declaration", "interface_declaration",
                         "abstract_class_declaration", "struct_declaration", "record_declaration"})  # fmt: skip
MAX_SIGNATURE_LINES = 80
STYLE_LINES = 12
LINT_FILES = (
    "ruff.toml", ".ruff.toml", ".flake8", "setup.cfg", "tox.ini", "pyproject.toml",
    ".editorconfig", ".eslintrc", ".eslintrc.json", ".eslintrc.js", ".eslintrc.cjs",
    ".eslintrc.yml", ".eslintrc.yaml", "eslint.config.js", "eslint.config.mjs",
    "eslint.config.cjs", ".prettierrc", ".prettierrc.json", ".golangci.yml",
    "STYLE.md", "docs/STYLE.md", "CONTRIBUTING.md", "docs/CONTRIBUTING.md",
)  # fmt: skip
# The lint sections of files that hold other settings too.
LINT_SECTIONS = {
    "pyproject.toml": re.compile(r"^\[tool\.(ruff|flake8|black|isort|pylint|mypy)\b"),
    "setup.cfg": re.compile(r"^\[(flake8|pycodestyle|isort|mypy|pylint)\b"),
    "tox.ini": re.compile(r"^\[(flake8|pycodestyle|isort)\b"),
}


_PARSERS = threading.local()  # a tree-sitter parser is not safe to share between threads


def _parser(language: str) -> Any:
    parsers: dict[str, Any] = _PARSERS.__dict__.setdefault("by_language", {})
    if language not in parsers:
        from tree_sitter_language_pack import get_parser  # a large native library: load on use

        parsers[language] = get_parser(language)  # type: ignore[arg-type]
    return parsers[language]


def _grammar(path: str) -> str | None:
    return GRAMMARS.get(PurePosixPath(path).suffix.lower())


def _first_line(text: str) -> str:
    stripped = text.strip().strip("\"'`").strip()
    line = stripped.splitlines()[0].strip() if stripped else ""
    return line.lstrip("/#* ").removesuffix("*/").strip()


def _header(node: Any, source: bytes) -> str:
    body = node.child_by_field_name("body")
    end = body.start_byte if body is not None else node.end_byte
    text = source[node.start_byte : end].decode("utf-8", "replace")
    if body is None:
        text = text.splitlines()[0] if text else ""
    return " ".join(text.split()).rstrip("{ ").rstrip()


def _doc(node: Any, source: bytes) -> str:
    body = node.child_by_field_name("body")
    if body is not None and body.named_child_count and node.type.endswith("_definition"):
        first = body.named_children[0]
        if first.type == "expression_statement" and first.named_child_count:
            first = first.named_children[0]
        if first.type == "string":
            return _first_line(first.text.decode("utf-8", "replace"))
    outer = node
    while outer.parent is not None and outer.parent.type in (
        "export_statement",
        "decorated_definition",
    ):
        outer = outer.parent  # the comment stands before ``export`` or the decorators
    before = outer.prev_named_sibling
    if (
        before is not None
        and "comment" in before.type
        and before.end_point[0] + 1 >= node.start_point[0]
    ):
        return _first_line(before.text.decode("utf-8", "replace"))
    return ""


def _definitions(node: Any, source: bytes, depth: int) -> Iterator[str]:
    for child in node.named_children:
        if child.type in DEFINITIONS:
            doc = _doc(child, source)
            yield "    " * depth + _header(child, source) + (f"  # {doc}" if doc else "")
            body = child.child_by_field_name("body")
            if child.type in OPENS_SCOPE and body is not None:
                yield from _definitions(body, source, depth + 1)
        elif child.type in CONTAINERS:
            yield from _definitions(child, source, depth)


def _parsed(text: str, path: str) -> tuple[Any, bytes] | None:
    """The syntax tree's root of a source file and its bytes, or None for a language
    without a grammar."""
    grammar = _grammar(path)
    if grammar is None:
        return None
    source = text.encode("utf-8")
    return _parser(grammar).parse(source).root_node, source


def signatures(text: str, path: str) -> str | None:
    """The signatures-only view of a source file, or None for a language without one."""
    parsed = _parsed(text, path)
    if parsed is None:
        return None
    root, source = parsed
    lines = list(_definitions(root, source, 0))[:MAX_SIGNATURE_LINES]
    return "\n".join(lines) or None


def style_example(text: str, path: str) -> str | None:
    """A few lines of a file's first definition (its style, not its content)."""
    parsed = _parsed(text, path)
    if parsed is None:
        return None
    root, source = parsed
    stack = [root]
    while stack:
        node = stack.pop(0)
        if node.type in DEFINITIONS:
            lines = source[node.start_byte : node.end_byte].decode("utf-8", "replace")
            return "\n".join(lines.splitlines()[:STYLE_LINES])
        if node.type in CONTAINERS:
            stack.extend(node.named_children)
    return None


_PY_FROM = re.compile(r"^\s*from\s+(\.*)([\w.]*)\s+import\s+([\w, ()]+)", re.M)
_PY_IMPORT = re.compile(r"^\s*import\s+([\w.]+)", re.M)
_JS_IMPORT = re.compile(r"(?:from\s+|require\(\s*|import\s*\(?\s*)['\"](\.{1,2}/[^'\"]+)['\"]")
_JAVA_IMPORT = re.compile(r"^\s*import\s+(?:static\s+)?([\w.]+?)(?:\.\*)?\s*;", re.M)
_GO_IMPORT = re.compile(r"\"([\w./-]+)\"")


def _python_imports(rel: str, text: str) -> Iterator[str]:
    package = PurePosixPath(rel).parent
    for dots, module, names in _PY_FROM.findall(text):
        base = package
        for _ in range(max(len(dots) - 1, 0)):
            base = base.parent
        stem = "/".join(p for p in module.split(".") if p)
        prefix = (f"{base}/" if dots and str(base) != "." else "") + stem
        yield from (f"{prefix}.py", f"{prefix}/__init__.py")
        for name in re.findall(r"\w+", names):
            yield f"{prefix}/{name}.py".lstrip("/")
    for module in _PY_IMPORT.findall(text):
        yield module.replace(".", "/") + ".py"


def _js_imports(rel: str, text: str) -> Iterator[str]:
    for spec in _JS_IMPORT.findall(text):
        target = PurePosixPath(rel).parent.joinpath(spec)
        parts: list[str] = []
        for part in target.parts:
            if part == "..":
                if parts:
                    parts.pop()
            elif part != ".":
                parts.append(part)
        base = "/".join(parts)
        for suffix in ("", ".ts", ".tsx", ".js", ".jsx", ".mjs", "/index.ts", "/index.js"):
            yield base + suffix


def _java_imports(rel: str, text: str) -> Iterator[str]:
    for name in _JAVA_IMPORT.findall(text):
        yield name.replace(".", "/") + ".java"


_GO_BLOCK = re.compile(r"^import\s*(?:\(([^)]*)\)|(\"[^\"]+\"))", re.M)
_CS_USING = re.compile(r"^\s*using\s+(?:static\s+)?([\w.]+)\s*;", re.M)


def _go_imports(rel: str, text: str) -> Iterator[str]:
    """A module's import path names a directory: its last two segments, as a suffix."""
    for block, single in _GO_BLOCK.findall(text):
        for path in _GO_IMPORT.findall(block or single):
            if "." not in path.split("/")[0]:
                continue  # the standard library (fmt, net/http), not the project
            yield "dir:" + "/".join(path.split("/")[-2:])


def _csharp_imports(rel: str, text: str) -> Iterator[str]:
    """A C# namespace names a directory by convention (``Shop.Services`` -> Services/)."""
    for namespace in _CS_USING.findall(text):
        if not namespace.startswith(("System", "Microsoft")):
            yield "dir:" + "/".join(namespace.split(".")[-2:])


IMPORTERS: dict[str, Callable[[str, str], Iterator[str]]] = {
    "go": _go_imports,
    "csharp": _csharp_imports,
    "python": _python_imports,
    "javascript": _js_imports,
    "typescript": _js_imports,
    "tsx": _js_imports,
    "java": _java_imports,
}


def related_files(root: Path, files: list[str], targets: list[str]) -> list[str]:
    """Workspace files the ``targets`` import (Python, JavaScript/TypeScript, Java: a
    module path matches a file at the same path or ending with it, as in a src/ layout;
    Go and C#: files of the directory an import path or namespace names)."""
    known = set(files)
    by_suffix: dict[str, list[str]] = {}
    for f in files:
        parts = f.split("/")
        for i in range(1, min(len(parts), 4)):
            by_suffix.setdefault("/".join(parts[i:]), []).append(f)
    out: list[str] = []
    for target in targets:
        grammar = _grammar(target)
        importer = IMPORTERS.get(grammar or "")
        text = read_workspace_text(root, target) if importer else None
        if importer is None or text is None:
            continue
        for candidate in importer(target, text):
            if candidate.startswith("dir:"):
                hits = _in_directory(files, candidate[4:], PurePosixPath(target).suffix)
            else:
                hits = [candidate] if candidate in known else by_suffix.get(candidate, [])[:1]
            out.extend(h for h in hits if h not in targets)
    return list(dict.fromkeys(out))


def _in_directory(files: list[str], folder: str, suffix: str) -> list[str]:
    """Up to five non-test files of ``suffix`` in a directory whose path ends with
    ``folder`` (or its last segment)."""
    last = folder.rsplit("/", 1)[-1]
    found = [
        f for f in files
        if f.endswith(suffix) and "test" not in PurePosixPath(f).name.lower()
        and (str(PurePosixPath(f).parent).endswith(folder)
             or PurePosixPath(f).parent.name == last)
    ]  # fmt: skip
    return found[:5]


def neighbour_of(files: list[str], targets: list[str], skip: set[str]) -> str | None:
    """A file beside the first target, in its language, that is neither a target nor a test."""
    for target in targets:
        suffix = PurePosixPath(target).suffix.lower()
        if suffix not in GRAMMARS:
            continue
        folder = str(PurePosixPath(target).parent)
        same = [f for f in files if PurePosixPath(f).suffix.lower() == suffix and f not in skip
                and "test" not in PurePosixPath(f).name.lower()]  # fmt: skip
        near = [f for f in same if str(PurePosixPath(f).parent) == folder]
        if near or same:
            return (near or same)[0]
    return None


def lint_rules(root: Path, files: list[str]) -> Iterator[tuple[str, str]]:
    """(path, text) of each lint or style file the project has; from files that hold other
    settings too, only the lint tools' sections."""
    present = set(files)
    for rel in LINT_FILES:
        if rel not in present:
            continue
        text = read_workspace_text(root, rel)
        if not text:
            continue
        wanted = LINT_SECTIONS.get(rel)
        if wanted is not None:
            text = _sections(text, wanted)
        if text.strip():
            yield rel, text


def _sections(text: str, wanted: re.Pattern[str]) -> str:
    kept: list[str] = []
    keep = False
    for line in text.splitlines():
        if line.startswith("["):
            keep = bool(wanted.match(line))
        if keep:
            kept.append(line)
    return "\n".join(kept)
