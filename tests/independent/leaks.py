"""Does a text expose a secret value, in any encoding a command or a server could use?

``exposures`` looks for every 12-character window of each value (so a value printed in
pieces, one line of ``od -c`` or a part of ``xxd``'s text column counts) after undoing
what commands do to text: whitespace and replacement characters removed, reversed, rot13,
hex, base32, base64 runs decoded at every alignment (and gunzipped), runs of decimal or
octal byte values (``od -tu1``/``od -b``), JSON and percent escapes. Independent of the
production redaction code on purpose.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import json
import re
import zlib
from collections.abc import Iterable
from urllib.parse import unquote

WINDOW = 12
_B64_RUN = re.compile(r"[A-Za-z0-9+/=_\-]{16,}")
_HEX_RUN = re.compile(r"[0-9a-fA-F]{24,}")
_B32_RUN = re.compile(r"[A-Z2-7=]{20,}")
_NUMBERS = re.compile(r"(?:\b\d{1,3}\b[\s,]*){12,}")


def _windows(value: str) -> set[str]:
    if len(value) <= WINDOW:
        return {value}
    return {value[i : i + WINDOW] for i in range(len(value) - WINDOW + 1)}


def _squeeze(text: str) -> str:
    return re.sub(r"[\s\ufffd\x00\\\"'`,|]+", "", text)


def _decoded_runs(text: str) -> Iterable[bytes]:
    squeezed = re.sub(r"[\s\ufffd]+", "", text)
    for run in _B64_RUN.findall(squeezed):
        for skip in range(4):
            chunk = run[skip:]
            chunk = chunk[: len(chunk) - len(chunk) % 4] if "=" not in chunk else chunk
            for alt in (chunk, chunk.replace("-", "+").replace("_", "/")):
                try:
                    yield base64.b64decode(alt + "=" * (-len(alt) % 4), validate=False)
                except (binascii.Error, ValueError):
                    continue
    for run in _HEX_RUN.findall(squeezed):
        for skip in (0, 1):
            part = run[skip:]
            yield bytes.fromhex(part[: len(part) - len(part) % 2])
    for run in _B32_RUN.findall(squeezed):
        try:
            yield base64.b32decode(run + "=" * (-len(run) % 8))
        except (binascii.Error, ValueError):
            continue
    for run in _NUMBERS.findall(text):
        numbers = [int(n) for n in re.findall(r"\d+", run)]
        if all(n < 256 for n in numbers):
            yield bytes(numbers)
        octal = [int(n, 8) for n in re.findall(r"\d+", run) if set(n) <= set("01234567")]
        if octal and all(n < 256 for n in octal):
            yield bytes(octal)


def _unzipped(data: bytes) -> bytes:
    start = data.find(b"\x1f\x8b")
    if start < 0:
        return b""
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[start:])
    except zlib.error:
        return b""


def _views(text: str) -> list[str]:
    views = [text, unquote(text), html.unescape(text)]
    try:
        views.append(json.loads(f'"{text}"'))
    except ValueError:
        views.append(re.sub(r"\\u00([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), text))
    return views


def exposures(text: str, values: Iterable[str]) -> list[str]:
    """How each of ``values`` shows in ``text`` (empty: it does not)."""
    found: list[str] = []
    binaries = [b for b in _decoded_runs(text)]
    binaries += [u for u in map(_unzipped, binaries) if u]
    texts = [_squeeze(v) for v in _views(text)]
    texts += [_squeeze(b.decode("latin-1")) for b in binaries]
    for value in values:
        windows = _windows(value)
        for name, shown in (
            ("plain", texts),
            ("reversed", [t[::-1] for t in texts]),
            ("rot13", [codecs.encode(t, "rot13") for t in texts]),
        ):
            if any(w in t for t in shown for w in windows):
                found.append(f"{value[:6]}... {name}")
                break
    return found
