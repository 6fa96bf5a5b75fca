"""Role-shaped context: what the model sees of the workspace, rebuilt for every job.

Strategies (spec "Context Management by Role"): ``broad`` (structure, key files, files
ranked by relevance to the task), ``focused`` (files the task or plan step names, and
their tests), ``change_focused`` (pending diffs, changed files, related tests, the
original request) and ``adaptive`` (picks one). ``.gitignore``d, binary and vendored
files are left out, and every text is passed through secret redaction.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from sessions_app.agent.redaction import redact_file, redact_text
from sessions_app.agent.workspace import is_binary, workspace_files

BUDGETS = {"broad": 16_000, "focused": 6_000, "change_focused": 8_000}
ADAPTIVE_BROAD_BUDGET = 8_000
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
EXCERPT_LINES = 60


def estimate_tokens(text: str) -> int:
    """A model-independent estimate (about four characters a token)."""
    return max(1, len(text) // 4)


@dataclass
class FileShare:
    path: str
    tokens: int
    mode: str  # full | excerpt | diff | structure | request
    share: float = 0.0


@dataclass
class ContextBundle:
    """The context text sent to the model and what it is made of."""

    role: str
    strategy: str
    requested_strategy: str
    budget: int
    text: str = ""
    token_count: int = 0
    files: list[FileShare] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "strategy": self.strategy,
            "requested_strategy": self.requested_strategy,
            "budget": self.budget,
            "token_count": self.token_count,
            "files": [
                {"path": f.path, "tokens": f.tokens, "mode": f.mode, "share": round(f.share, 4)}
                for f in self.files
            ],
            "notes": self.notes,
        }


class _Builder:
    def __init__(self, bundle: ContextBundle) -> None:
        self.bundle = bundle
        self.parts: list[str] = []
        self.used = 0
        self.seen: set[str] = set()

    def room(self) -> int:
        return self.bundle.budget - self.used

    def add(self, title: str, body: str, *, path: str, mode: str, force: bool = False) -> bool:
        section = f"## {title}\n{body.rstrip()}\n"
        tokens = estimate_tokens(section)
        if not force and tokens > self.room():
            return False
        self.parts.append(section)
        self.used += tokens
        self.seen.add(path)
        self.bundle.files.append(FileShare(path, tokens, mode))
        return True

    def add_file(self, root: Path, rel: str, *, mode: str = "full") -> bool:
        if rel in self.seen:
            return False
        text = _read(root, rel)
        if text is None:
            return False
        text = redact_file(rel, text)
        body = f"```\n{text}\n```"
        if self.add(f"File: {rel} ({mode})", body, path=rel, mode=mode):
            return True
        lines = text.splitlines()
        if len(lines) > EXCERPT_LINES:
            excerpt = (
                "\n".join(lines[:EXCERPT_LINES]) + f"\n… ({len(lines) - EXCERPT_LINES} more lines)"
            )
            return self.add(
                f"File: {rel} (excerpt)", f"```\n{excerpt}\n```", path=rel, mode="excerpt"
            )
        return False

    def finish(self) -> ContextBundle:
        b = self.bundle
        header = f"# Context for role {b.role} (strategy: {b.strategy})\n"
        b.text = header + "\n".join(self.parts)
        b.token_count = estimate_tokens(b.text)
        total = sum(f.tokens for f in b.files) or 1
        for f in b.files:
            f.share = f.tokens / total
        return b


def _read(root: Path, rel: str) -> str | None:
    path = root / rel
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 400_000:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if is_binary(data):
        return None
    return data.decode("utf-8", "replace")


def candidate_files(root: Path) -> list[str]:
    """Workspace files worth showing: not ignored, not binary by name, not vendored."""
    return [
        f
        for f in workspace_files(root)
        if PurePosixPath(f).suffix.lower() not in BINARY_SUFFIXES and not VENDORED.search(f)
    ]


def _terms(text: str) -> list[str]:
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", text)
    out: list[str] = []
    for word in words:
        for part in [*re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", word), word]:
            lowered = part.lower()
            if len(lowered) >= 3 and lowered not in STOPWORDS:
                out.append(lowered)
    return list(dict.fromkeys(out))


def _structure(files: list[str]) -> str:
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


def _rank(root: Path, files: list[str], terms: list[str], limit: int = 60) -> list[str]:
    if not terms:
        return sorted(files, key=lambda f: (f.count("/"), f))[:limit]

    def path_score(f: str) -> float:
        lowered = f.lower()
        return sum(3.0 for t in terms if t in lowered) - 0.1 * f.count("/")

    shortlist = sorted(files, key=lambda f: (-path_score(f), f))[: limit * 2]
    scored: list[tuple[float, str]] = []
    for f in shortlist:
        text = (_read(root, f) or "")[:50_000].lower()
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


def _named_files(files: list[str], text: str) -> list[str]:
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


def _tests_for(files: list[str], targets: Iterable[str]) -> list[str]:
    tests = [(f, _stem(f).lower()) for f in files if _is_test(f)]
    out: list[str] = []
    for target in targets:
        stem = _stem(target).lower()
        out.extend(f for f, test_stem in tests if f != target and stem and stem in test_stem)
    return list(dict.fromkeys(out))


def build_context(
    *,
    workspace: Path,
    role_name: str,
    strategy: str,
    request: str,
    task: str = "",
    plan: list[dict[str, Any]] | None = None,
    pending: dict[str, str] | None = None,
    budget_cap: int | None = None,
) -> ContextBundle:
    """Assemble context for one job in one role, within the strategy's token budget.

    ``budget_cap`` keeps the context inside what the model can take (its context window).
    """
    pending = pending or {}
    plan = plan or []
    files = candidate_files(workspace)
    step_text = " ".join(
        s.get("title", "") + " " + " ".join(s.get("files", []))
        for s in plan
        if s.get("status") in ("pending", "in_progress")
    )[:2000]
    requested = strategy
    notes: list[str] = []
    if strategy == "adaptive":
        if pending:
            strategy = "change_focused"
        elif _named_files(files, f"{request} {step_text}"):
            strategy = "focused"
        else:
            strategy = "broad"
        notes.append(f"adaptive strategy chose {strategy}")
    budget = (
        BUDGETS[strategy]
        if requested != "adaptive" or strategy != "broad"
        else ADAPTIVE_BROAD_BUDGET
    )
    if budget_cap is not None and budget_cap < budget:
        notes.append(f"budget capped at {budget_cap} tokens by the model's context window")
        budget = budget_cap
    builder = _Builder(ContextBundle(role_name, strategy, requested, budget, notes=notes))
    request_text = redact_text(
        request if not task or task == request else f"{request}\n\nSession task: {task}"
    )
    builder.add("Request", request_text, path="(request)", mode="request", force=True)

    if strategy == "broad":
        builder.add(
            "Project structure", _structure(files), path="(structure)", mode="structure", force=True
        )
        for key in KEY_FILES:
            if key in files:
                builder.add_file(workspace, key)
        for f in _rank(workspace, files, _terms(f"{request} {task}")):
            if builder.room() < 50:
                break
            builder.add_file(workspace, f)
    elif strategy == "focused":
        named = _named_files(files, f"{request} {step_text}")
        if not named:
            builder.bundle.notes.append(
                "the request names no workspace file; nothing focused to include"
            )
        for f in named + _tests_for(files, named):
            builder.add_file(workspace, f)
    else:  # change_focused
        if not pending:
            builder.bundle.notes.append("no pending changes")
        for path, diff in sorted(pending.items()):
            builder.add(
                f"Diff: {path}",
                f"```diff\n{redact_text(diff)}\n```",
                path=path,
                mode="diff",
                force=True,
            )
        for path in sorted(pending):
            if path in files:
                builder.seen.discard(path)
                builder.add_file(workspace, path)
        for f in _tests_for(files, pending):
            builder.add_file(workspace, f)
    return builder.finish()
