"""Request body parsers the roles API shares."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser


class PlainTextParser(BaseParser):
    """YAML (or any text) request bodies, passed through as a string."""

    media_type = "*/*"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> str:  # type: ignore[override]
        try:
            return str(stream.read().decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ParseError(f"The body is not UTF-8 text: {exc}") from exc
