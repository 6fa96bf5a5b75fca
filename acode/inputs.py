"""What every API input must be: JSON bodies the parser can trust, text with visible content.

The request body's size and the header lengths are checked earlier, before anything parses
the request (``acode.middleware``). Here: JSON bodies refuse NUL characters and unpaired
surrogates anywhere (keys too) and more than ``MAX_JSON_DEPTH`` levels of nesting, and
``Text`` fields count invisible characters (zero-width spaces, BOM, ...) as blank.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.parsers import JSONParser

from acode.errors import AcodeError
from acode.text import (
    FORBIDDEN_CHARACTERS,
    has_forbidden_characters,
    is_blank,
    is_invisible,
    trim_invisible,
)

__all__ = [
    "FORBIDDEN_CHARACTERS",
    "MAX_JSON_DEPTH",
    "StrictJSONParser",
    "Text",
    "check_json_value",
    "has_forbidden_characters",
    "is_blank",
    "is_invisible",
    "trim_invisible",
]

MAX_JSON_DEPTH = 32


class Text(serializers.CharField):
    """Text input with a required length limit. Trimming removes invisible characters as
    well as whitespace, so text of zero-width spaces alone is blank. (DRF's CharField
    already refuses NUL characters and surrogates.)"""

    def __init__(self, *, max_length: int, **kwargs: Any) -> None:
        super().__init__(max_length=max_length, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if self.trim_whitespace:
            value = trim_invisible(value)
        if not value and not self.allow_blank:
            self.fail("blank")
        return value


def _refuse(code: str, message: str, where: str) -> AcodeError:
    return AcodeError(code, message, {"location": where or "(the body itself)"})


def check_json_value(data: Any) -> None:
    """Refuse forbidden characters in any string or key, and nesting deeper than the limit.

    Iterative, so a deep document cannot exhaust the stack here either."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, str):
            if has_forbidden_characters(value):
                raise _refuse(
                    "ACODE-INP-003", "The JSON body holds a NUL or an unpaired surrogate.", where
                )
            continue
        if not isinstance(value, dict | list):
            continue
        if depth >= MAX_JSON_DEPTH:
            raise _refuse(
                "ACODE-INP-004", f"The JSON body is nested deeper than {MAX_JSON_DEPTH}.", where
            )
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(key, str) and has_forbidden_characters(key):
                raise _refuse(
                    "ACODE-INP-003", "A JSON key holds a NUL or an unpaired surrogate.", where
                )
            stack.append((item, f"{where}/{key}", depth + 1))


class StrictJSONParser(JSONParser):
    """DRF's JSON parser, plus ``check_json_value`` on what it parsed."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise _refuse(
                "ACODE-INP-004", f"The JSON body is nested deeper than {MAX_JSON_DEPTH}.", ""
            ) from None
        check_json_value(data)
        return data
