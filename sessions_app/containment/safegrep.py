"""Searching a workspace with a regular expression, in linear time.

Patterns run on RE2 (google-re2): no backtracking, so no pattern can take long
(backreferences and lookaround, which need backtracking, are refused with a clear
reason). Files are read in this process through ``safefs`` (never following links), and
what is searched is what the role may see of each file (``shown``): a file hidden for its
name is not searched, one holding secrets is searched in its redacted form, so a match
never reveals a hidden value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acode.patterns import compile_re2
from sessions_app.containment.safefs import DEFAULT_SKIP_DIRS, Refused, WorkspaceFS

REGEX_META = frozenset(".^$*+?{}[]\\|()")
BINARY_SNIFF = 8192
MAX_LINE = 500


@dataclass(frozen=True)
class GrepMatch:
    """One matching line (cut to ``MAX_LINE`` characters), 1-based line number."""

    path: str
    line_number: int
    line: str


@dataclass(frozen=True)
class GrepResult:
    """The matches, whether the search stopped early, and how many files it read."""

    matches: list[GrepMatch]
    truncated: bool  # stopped at max_matches or the byte budget
    files_searched: int


def search(
    fs: WorkspaceFS,
    pattern: str,
    *,
    rel: str = ".",
    ignore_case: bool = False,
    fixed: bool = False,
    max_matches: int = 200,
    max_file_bytes: int = 1 << 20,
    max_total_bytes: int = 32 << 20,
    skip_dirs: frozenset[str] = DEFAULT_SKIP_DIRS,
    shown: Callable[[str, bytes], bytes | None] | None = None,
) -> GrepResult:
    """Lines matching ``pattern`` in the text files ``fs.walk(rel)`` yields, as ``shown``
    presents each (None: the file is not searched at all).

    Files over ``max_file_bytes``, binary files, links and hard links are skipped; reading
    stops at ``max_total_bytes``. Raises ``Refused`` for an invalid pattern."""
    if not pattern or len(pattern) > 1000:
        raise Refused("a search pattern of 1 to 1000 characters is required")
    literal = fixed or not (REGEX_META & set(pattern))
    if not literal:
        try:
            compiled = compile_re2(f"(?i){pattern}" if ignore_case else pattern)
        except ValueError as exc:
            raise Refused(f"invalid regular expression: {exc}") from None
    found: list[GrepMatch] = []
    files, truncated, budget = 0, False, max_total_bytes
    needle = pattern.lower() if ignore_case else pattern
    for path in fs.walk(rel, skip_dirs):
        try:
            data = fs.read_bytes(path, max_file_bytes)
        except (Refused, OSError):
            continue  # too big, replaced or vanished meanwhile
        if b"\0" in data[:BINARY_SNIFF]:
            continue
        view = shown(path, data) if shown is not None else data
        if view is None:
            continue
        budget -= len(data)
        if budget < 0:
            truncated = True
            break
        files += 1
        for number, line in enumerate(view.decode("utf-8", "replace").splitlines(), 1):
            hit = (
                (needle in (line.lower() if ignore_case else line))
                if literal
                else compiled.search(line)
            )
            if hit:
                found.append(GrepMatch(path, number, line[:MAX_LINE]))
                if len(found) >= max_matches:
                    return GrepResult(found, True, files)
    return GrepResult(found, truncated, files)


def grep(root: Path, pattern: str, **options: Any) -> GrepResult:
    """One-shot ``search`` over the workspace at ``root``."""
    with WorkspaceFS(root) as fs:
        return search(fs, pattern, **options)
