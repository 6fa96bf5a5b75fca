"""What text acode accepts, as functions and as the regular expressions the API schema shows.

No NUL characters and no unpaired surrogates anywhere (NUL breaks PostgreSQL text, a lone
surrogate cannot be encoded as UTF-8 at all); text that must not be blank needs a visible
character (whitespace, control and format characters such as zero-width spaces, BOM and
bidi marks show nothing). No Django imports: the CLI and the YAML loader use it too.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

FORBIDDEN_CHARACTERS = re.compile("[\x00\ud800-\udfff]")
# Characters that render as nothing but are neither whitespace nor format/control characters.
_BLANK_LOOKING = frozenset("\u115f\u1160\u2800\u3164\uffa0")


def is_invisible(char: str) -> bool:
    """Whitespace, control and format characters (ZWSP, ZWJ, BOM, bidi marks) show nothing.

    Only the Basic Multilingual Plane's: the API schema says the same as a pattern, and a
    pattern (ECMAScript without the u flag) cannot name a character beyond it. The few
    format characters there (tags, hieroglyph and musical format controls) count as
    visible."""
    return (
        char.isspace()
        or char in _BLANK_LOOKING
        or (char <= "\uffff" and unicodedata.category(char) in ("Cc", "Cf"))
    )


def storable(text: str) -> str:
    """Text every database, hash and model accepts: NUL and lone surrogates become U+FFFD."""
    return FORBIDDEN_CHARACTERS.sub("\ufffd", text)


def is_blank(text: str) -> bool:
    """True when the text has no visible character."""
    return all(is_invisible(char) for char in text)


def trim_invisible(text: str) -> str:
    """The text without invisible characters at either end."""
    start, end = 0, len(text)
    while start < end and is_invisible(text[start]):
        start += 1
    while end > start and is_invisible(text[end - 1]):
        end -= 1
    return text[start:end]


def has_forbidden_characters(text: str) -> bool:
    return FORBIDDEN_CHARACTERS.search(text) is not None


# -- the same rules as JSON Schema patterns ------------------------------------------------
# Written with escapes, not the characters themselves: the schema is served as UTF-8, which
# cannot carry a lone surrogate. Python's ``re`` (schemathesis, the tests) and ECMAScript
# both read ``\uXXXX``; the few invisible characters beyond the BMP appear as themselves.
# Lone surrogates are not in the patterns (no generator makes them and not every regex
# engine can name them); the parameter descriptions and the 400 ACODE-INP-003 say so.
# Every invisible character is in the BMP (``is_invisible``), so each is a ``\uXXXX``.
NO_NUL_PATTERN = r"^[^\u0000]*$"


def _ranges(codes: list[int]) -> str:
    parts: list[str] = []
    start = previous = codes[0]
    for code in [*codes[1:], -2]:
        if code == previous + 1:
            previous = code
            continue
        first, last = f"\\u{start:04x}", f"\\u{previous:04x}"
        parts.append(first if start == previous else f"{first}-{last}")
        start = previous = code
    return "".join(parts)


def _class_of(test: Callable[[str], bool]) -> str:
    """A regex character class body of the BMP characters ``test`` accepts."""
    return _ranges([c for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF and test(chr(c))])


# What ``str.strip()`` and ``str.isspace()`` call whitespace (``\s`` in ``re`` leaves out
# \x1c-\x1f), and text that is not only that, with no NUL either.
WHITESPACE = _class_of(str.isspace)
NOT_WHITESPACE_PATTERN = rf"^[^\u0000]*[^{WHITESPACE}\u0000][^\u0000]*$"


@functools.cache
def blank_text_pattern() -> str:
    """A pattern of blank text, invisible characters only: what ``is_blank`` says, built
    from the same ``is_invisible`` once. The schema says "not this" where it refuses it."""
    invisible = [
        code for code in range(0x10000) if not 0xD800 <= code <= 0xDFFF and is_invisible(chr(code))
    ]
    return rf"^[{_ranges(invisible)}]*$"


def headline(text: str, limit: int = 60) -> str:
    """The first line of ``text`` in at most ``limit`` characters, cut between words with
    an ellipsis (a commit subject, a card title): never mid-word (issue 34)."""
    line = " ".join((text.strip().splitlines() or [""])[0].split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if " " in cut and not line[limit - 1].isspace():
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:.-") + "…"
