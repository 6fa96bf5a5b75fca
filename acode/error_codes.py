"""The documented table of acode error codes. No Django imports: the CLI uses it too.

The table itself is data, ``error_codes.toml`` beside this module (one entry per code, in
the README's order); this module reads it once, on import.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ErrorCode:
    """One documented error: its stable code, HTTP status, title and what to do about it."""

    code: str
    http_status: int
    title: str
    hint: str


# Failures the model caused, not the work: a loop, a spent budget, an answer that could not
# be read or was not a plan, a Coder that changed nothing or made no progress. A run that
# ended on one of these does not make the session's next run riskier, and its message
# suggests a stronger model.
MODEL_FAILURE_CODES = frozenset(
    {
        "ACODE-JOB-001",
        "ACODE-JOB-002",
        "ACODE-JOB-008",
        "ACODE-JOB-009",
        "ACODE-LLM-002",
        "ACODE-RUN-006",
        "ACODE-RUN-007",
    }
)
MODEL_SETTINGS_HINT = (
    "The model failed, not the request: small models often do. Configure a stronger model "
    "in admin, Model endpoints (/admin/roles/modelendpoint/), then start the run again."
)


def _load() -> list[ErrorCode]:
    """The table, in its order; a code without its status, title or hint fails loudly."""
    with (Path(__file__).parent / "error_codes.toml").open("rb") as table:
        rows = tomllib.load(table)
    return [
        ErrorCode(code, int(row["http_status"]), str(row["title"]), str(row["hint"]))
        for code, row in rows.items()
    ]


_CODES = _load()
ERROR_CODES: dict[str, ErrorCode] = {entry.code: entry for entry in _CODES}


def error_table_markdown() -> str:
    """The documented error table, as Markdown (README and docs)."""
    lines = ["| Code | HTTP | Meaning | What to do |", "| --- | --- | --- | --- |"]
    lines += [f"| `{e.code}` | {e.http_status} | {e.title} | {e.hint} |" for e in _CODES]
    return "\n".join(lines)


if __name__ == "__main__":
    print(error_table_markdown())
