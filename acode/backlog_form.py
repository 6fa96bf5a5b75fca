"""The form of a backlog document (epics with their tasks, and tasks outside any epic), as
a JSON Schema: one definition for the YAML import the API publishes
(``sessions_app.services.backlog_document``) and the Product Manager's ``propose_backlog``
tool (``roles.tools``), so what a person imports and what the model proposes are checked
alike. Here, below both apps, because ``roles`` never imports ``sessions_app``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acode.text import NO_NUL_PATTERN, NOT_WHITESPACE_PATTERN

MAX_EPICS = 50
MAX_TASKS = 200  # per epic, and outside any epic
PRIORITIES = ("high", "medium", "low")  # sessions_app.models.TaskPriority's values
_KEY = {"type": "string", "pattern": r"^[-a-zA-Z0-9_]+$", "maxLength": 64}
_TITLE = {"type": "string", "pattern": NOT_WHITESPACE_PATTERN, "maxLength": 200}
_TEXT = {"type": "string", "pattern": NO_NUL_PATTERN, "maxLength": 20_000}
_LINE = {"type": "string", "pattern": NO_NUL_PATTERN, "maxLength": 2_000}


def _object(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": required,
        "properties": properties,
        "additionalProperties": False,
    }


_TASK = _object(
    ["key", "title"],
    {
        "key": _KEY,
        "title": _TITLE,
        "description": _TEXT,
        "acceptance_criteria": {
            "description": "A list of criteria, or one text with a criterion per line.",
            "type": ["array", "string"],
            "items": _LINE,
            "maxItems": 100,
            "pattern": NO_NUL_PATTERN,
            "maxLength": 20_000,
        },
        "priority": {"type": "string", "enum": list(PRIORITIES)},
        "depends_on": {"type": "array", "items": _KEY, "maxItems": 100},
        "template": {
            "description": "The workflow template its run uses (empty: the project's).",
            **_KEY,
            "pattern": r"^[-a-zA-Z0-9_]*$",
        },
    },
)
DOCUMENT_SCHEMA: dict[str, Any] = {
    **_object(
        [],
        {
            "epics": {
                "type": "array",
                "maxItems": MAX_EPICS,
                "items": _object(
                    ["key", "title"],
                    {
                        "key": _KEY,
                        "title": _TITLE,
                        "description": _TEXT,
                        "tasks": {"type": "array", "items": _TASK, "maxItems": MAX_TASKS},
                    },
                ),
            },
            "tasks": {"type": "array", "items": _TASK, "maxItems": MAX_TASKS},
        },
    ),
    "description": "Epics, each with its tasks, and tasks outside any epic. A task's key is "
    "new in the project; its dependencies name tasks of the document or the project.",
}

# Bounds a model's constrained decoding cannot take (llama.cpp nests its grammar once per
# allowed character or item: see roles.tools); the import checks them all again.
_BOUNDS = frozenset({"maxLength", "maxItems", "pattern"})


def unbounded(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` without length, count and pattern bounds, at every level (the form a
    model is shown; ``DOCUMENT_SCHEMA`` whole is what the import checks)."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _BOUNDS:
            continue
        if isinstance(value, Mapping):
            value = (
                unbounded(value)
                if key != "properties"
                else {name: unbounded(sub) for name, sub in value.items()}
            )
        out[key] = value
    return out
