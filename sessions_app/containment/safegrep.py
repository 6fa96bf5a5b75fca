"""Searching a workspace with a regular expression, bounded in time.

Python's ``re`` has no time limit and backtracks catastrophically on patterns like ``(a+)+$``
(the ``regex`` package, which has a ``timeout=``, is not a dependency). So files are read
in this process through ``safefs`` (never following links), and regular expressions are
matched in a child interpreter that is killed after the timeout. Plain text is searched
in-process.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessions_app.containment.safefs import DEFAULT_SKIP_DIRS, Refused, WorkspaceFS

REGEX_META = frozenset(".^$*+?{}[]\\|()")
GREP_TIMEOUT = 2.0
BINARY_SNIFF = 8192
MAX_LINE = 500


class PatternTimeout(Refused):
    """A search pattern that took too long (catastrophic backtracking)."""


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
    timeout: float = GREP_TIMEOUT,
    skip_dirs: frozenset[str] = DEFAULT_SKIP_DIRS,
) -> GrepResult:
    """Lines matching ``pattern`` in the text files ``fs.walk(rel)`` yields.

    Files over ``max_file_bytes``, binary files, links and hard links are skipped; reading
    stops at ``max_total_bytes``. Raises ``Refused`` for an invalid pattern and
    ``PatternTimeout`` when matching takes longer than ``timeout`` seconds.
    """
    if not pattern or len(pattern) > 1000:
        raise Refused("a search pattern of 1 to 1000 characters is required")
    flags = re.IGNORECASE if ignore_case else 0
    try:
        re.compile(re.escape(pattern) if fixed else pattern, flags)
    except re.error as exc:
        raise Refused(f"invalid regular expression: {exc}") from exc
    files, truncated, budget = [], False, max_total_bytes
    for path in fs.walk(rel, skip_dirs):
        try:
            data = fs.read_bytes(path, max_file_bytes)
        except (Refused, OSError):
            continue  # too big, replaced or vanished meanwhile
        if b"\0" in data[:BINARY_SNIFF]:
            continue
        budget -= len(data)
        if budget < 0:
            truncated = True
            break
        files.append((path, data))
    if fixed or not (REGEX_META & set(pattern)):
        found = _search_literal(files, pattern, ignore_case, max_matches)
    else:
        found = _search_regex(files, pattern, flags, max_matches, timeout)
    matches = [GrepMatch(p, n, line) for p, n, line in found]
    return GrepResult(matches, truncated or len(matches) >= max_matches, len(files))


def _search_literal(
    files: list[tuple[str, bytes]], needle: str, ignore_case: bool, limit: int
) -> list[tuple[str, int, str]]:
    found: list[tuple[str, int, str]] = []
    needle = needle.lower() if ignore_case else needle
    for path, data in files:
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if needle in (line.lower() if ignore_case else line):
                found.append((path, number, line[:MAX_LINE]))
                if len(found) >= limit:
                    return found
    return found


# Runs in a child interpreter (-I -S: no site, no environment) so a runaway pattern can be killed.
_WORKER = r"""
import json, re, struct, sys
src = sys.stdin.buffer
head = json.loads(src.readline())
rx = re.compile(head["pattern"], head["flags"])
found = []
while len(found) < head["max"]:
    size = src.read(8)
    if len(size) < 8:
        break
    plen, tlen = struct.unpack("<II", size)
    path = src.read(plen).decode("utf-8")
    text = src.read(tlen).decode("utf-8", "replace")
    for number, line in enumerate(text.splitlines(), 1):
        if rx.search(line):
            found.append([path, number, line[:head["width"]]])
            if len(found) >= head["max"]:
                break
sys.stdout.write(json.dumps(found))
"""


def _search_regex(
    files: list[tuple[str, bytes]], pattern: str, flags: int, limit: int, timeout: float
) -> list[tuple[str, int, str]]:
    head = (
        json.dumps({"pattern": pattern, "flags": flags, "max": limit, "width": MAX_LINE}).encode()
        + b"\n"
    )
    parts = [head]
    for path, data in files:
        raw = path.encode("utf-8")
        parts += [struct.pack("<II", len(raw), len(data)), raw, data]
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _WORKER], input=b"".join(parts),
            capture_output=True, timeout=timeout, env={}, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise PatternTimeout(
            f"the pattern took longer than {timeout:g} s (catastrophic backtracking?); "
            "simplify it, e.g. avoid nested repetition like (a+)+"
        ) from None
    if proc.returncode != 0:
        raise Refused(f"the search failed: {proc.stderr.decode('utf-8', 'replace')[-300:]}")
    rows: list[Any] = json.loads(proc.stdout)
    return [(str(p), int(n), str(line)) for p, n, line in rows]


def grep(root: Path, pattern: str, **options: Any) -> GrepResult:
    """One-shot ``search`` over the workspace at ``root``."""
    with WorkspaceFS(root) as fs:
        return search(fs, pattern, **options)
