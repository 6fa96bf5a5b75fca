"""Identifier-aware words: ``retry_limit`` and ``retryLimit`` are found by "retry limit".

The same function makes the words of indexed text and of a query, so both sides agree.
"""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
# Boundaries inside an identifier: "HTTPServer" -> HTTP Server, "retryLimit" -> retry Limit.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_MAX_WORD = 64


def words(text: str) -> list[str]:
    """Lower-case words of ``text``: each identifier whole and, when compound, its parts."""
    found: list[str] = []
    for match in _IDENTIFIER.finditer(text):
        identifier = match.group(0)[:_MAX_WORD]
        parts = [part.lower() for piece in identifier.split("_") for part in _CAMEL.findall(piece)]
        whole = identifier.strip("_").lower()
        if whole and (len(parts) != 1 or parts[0] != whole):
            found.append(whole)
        found.extend(parts)
    return found


def query_words(text: str) -> list[str]:
    """The distinct words of a query, in order (a repeated word adds no weight)."""
    return list(dict.fromkeys(words(text)))
