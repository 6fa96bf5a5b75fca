"""Which workspace files a context strategy picks: candidates, relevance, names, tests."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from sessions_app.containment import Refused, is_binary, read_bytes, workspace_files

MAX_CONTEXT_FILE = 400_000
KEY_FILES = (
    "README.md",
    "README.rst",
    "README.txt",
    "README",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "package.json",
    "manage.py",
    "Makefile",
    "Cargo.toml",
    "go.mod",
    "requirements.txt",
)
BINARY_SUFFIXES = frozenset(
    [
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".ico",
        ".webp",
        ".pdf",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".7z",
        ".so",
        ".dll",
        ".dylib",
        ".pyc",
        ".pyo",
        ".class",
        ".jar",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".mp3",
        ".mp4",
        ".mov",
        ".wav",
        ".sqlite3",
        ".db",
        ".bin",
        ".exe",
        ".mo",
    ]
)
VENDORED = re.compile(
    r"(^|/)(vendor|vendored|third_party|node_modules|static/vendor)/|\.min\.(js|css)$|(^|/)(package-lock\.json|yarn\.lock|poetry\.lock|Cargo\.lock)$"
)
STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "into",
        "add",
        "make",
        "use",
        "new",
        "all",
        "any",
        "are",
        "was",
        "were",
        "will",
        "can",
        "should",
        "must",
        "not",
        "but",
        "its",
        "it's",
        "our",
        "your",
        "their",
        "them",
        "then",
        "than",
        "when",
        "what",
        "which",
        "who",
        "how",
        "why",
        "implement",
        "create",
        "update",
        "fix",
        "change",
        "file",
        "files",
        "code",
        "test",
        "tests",
    ]
)


def read_workspace_text(root: Path, rel: str) -> str | None:
    """A workspace file's text through ``safefs`` (no link followed, no hard link, never
    ``.git``), or None for links, directories, large or binary files."""
    try:
        data = read_bytes(root, rel, MAX_CONTEXT_FILE)
    except (Refused, OSError):
        return None
    if is_binary(data):
        return None
    return data.decode("utf-8", "replace")


def candidate_files(root: Path, git_dir: Path | None = None) -> list[str]:
    """Workspace files worth showing: not ignored, not binary by name, not vendored."""
    return [
        f
        for f in workspace_files(root, git_dir)
        if PurePosixPath(f).suffix.lower() not in BINARY_SUFFIXES and not VENDORED.search(f)
    ]


def request_terms(text: str) -> list[str]:
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", text)
    out: list[str] = []
    for word in words:
        for part in [*re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", word), word]:
            lowered = part.lower()
            if len(lowered) >= 3 and lowered not in STOPWORDS:
                out.append(lowered)
    return list(dict.fromkeys(out))


def structure_outline(files: list[str]) -> str:
    counts: Counter[str] = Counter()
    for f in files:
        parts = PurePosixPath(f).parts
        counts[parts[0] if len(parts) > 1 else "."] += 1
        if len(parts) > 2:
            counts[f"{parts[0]}/{parts[1]}"] += 1
    lines = [
        f"{d}/  ({n} files)" if d != "." else f"(root)  ({n} files)"
        for d, n in sorted(counts.items())
    ]
    return "\n".join(lines[:200])


def rank_by_relevance(root: Path, files: list[str], terms: list[str], limit: int = 60) -> list[str]:
    if not terms:
        return sorted(files, key=lambda f: (f.count("/"), f))[:limit]

    def path_score(f: str) -> float:
        lowered = f.lower()
        return sum(3.0 for t in terms if t in lowered) - 0.1 * f.count("/")

    shortlist = sorted(files, key=lambda f: (-path_score(f), f))[: limit * 2]
    scored: list[tuple[float, str]] = []
    for f in shortlist:
        text = (read_workspace_text(root, f) or "")[:50_000].lower()
        content = sum(min(text.count(t), 10) for t in terms)
        scored.append((path_score(f) + content * 0.5, f))
    relevant = [f for score, f in sorted(scored, key=lambda s: (-s[0], s[1])) if score > 0]
    # Then the rest of the project, shallow files first, so a broad context stays broad.
    chosen = set(relevant)
    rest = sorted((f for f in files if f not in chosen), key=lambda f: (f.count("/"), f))
    return (relevant + rest)[:limit]


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _stem(path: str) -> str:
    name = _name(path)
    return name.rsplit(".", 1)[0] if "." in name[1:] else name


def named_files(files: list[str], text: str) -> list[str]:
    """Files a task or plan step names: by path, by file name, or by a matching identifier.

    Words of the text are looked up in dictionaries built once per call, so the cost is
    one pass over the file list whatever the text says.
    """
    lowered = text.lower()
    words = set(re.findall(r"[a-z0-9_./-]+", lowered))
    by_name: dict[str, list[str]] = {}
    by_stem: dict[str, list[str]] = {}
    for f in files:
        name = _name(f).lower()
        by_name.setdefault(name, []).append(f)
        stem = _stem(f).lower()
        by_stem.setdefault(stem, []).append(f)
        by_stem.setdefault(stem.replace("_", ""), []).append(f)
    # Tiers: paths and file names; code identifiers (CamelCase, snake_case); plain words
    # only when nothing more specific was named.
    tiers: list[list[str]] = [[], [], []]
    for word in words:
        if "/" in word:
            for f in by_name.get(_name(word), []):
                if f.lower().endswith(word) or word.endswith(f.lower()):
                    tiers[0].append(f)
        elif len(word) > 4 and "." in word:
            tiers[0].extend(by_name.get(word, []))
    for ident in re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", text):
        key = re.sub(r"(?<!^)(?=[A-Z])", "_", ident).lower()
        tier = 1 if (ident != ident.lower() or "_" in ident) else 2
        for candidate in (ident.lower(), key, key.replace("_", "")):
            tiers[tier].extend(f for f in by_stem.get(candidate, []) if not _is_test(f))
    order = {f: i for i, f in enumerate(files)}
    named = tiers[0] + tiers[1] or tiers[2]
    return sorted(dict.fromkeys(named), key=lambda f: order[f])


def _is_test(path: str) -> bool:
    name = _name(path)
    return name.startswith("test_") or _stem(path).endswith("_test") or "/tests/" in f"/{path}"


def tests_for(files: list[str], targets: Iterable[str]) -> list[str]:
    tests = [(f, _stem(f).lower()) for f in files if _is_test(f)]
    out: list[str] = []
    for target in targets:
        stem = _stem(target).lower()
        out.extend(f for f, test_stem in tests if f != target and stem and stem in test_stem)
    return list(dict.fromkeys(out))
