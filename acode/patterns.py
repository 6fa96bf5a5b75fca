"""Regular expressions from data (a role's limits, a tool's schema, a search, a team's secret
patterns) run on RE2: linear time whatever the pattern, so no input can stall a worker."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

__all__ = ["compile_re2", "re2_problem"]


@lru_cache(maxsize=1024)
def compile_re2(pattern: str) -> Any:
    """``pattern`` compiled by RE2; ``ValueError`` saying why when it cannot be (RE2 has no
    backreferences or lookaround: they are what makes a pattern slow)."""
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise ValueError(
            f"{pattern!r} is not a pattern acode can run in linear time (RE2 syntax: no "
            f"backreferences or lookaround): {reason}"
        ) from None


def re2_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot run on RE2, or None."""
    try:
        compile_re2(pattern)
    except ValueError as exc:
        return str(exc)
    return None
