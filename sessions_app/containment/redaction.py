"""Keep secrets out of everything sent to a model or stored in an audit row.

One function, ``redact_text``, masks: credentials in URLs, whatever the secret detector
(``secretscan``: token formats, private keys, keyword assignments, a team's patterns) finds,
and the known secret values (the server's own settings, every MCP server's declared
secrets, model endpoints' keys) in the encodings a command or a server could print them in
(``encodings``), wrapped over lines or spaced out. ``redact_file`` is what a model may see
of a file: nothing of a file secret by its name, the rest redacted.

Which rules and known values apply is configured once per process by the application
(``configure``): containment reads no database itself.
"""

from __future__ import annotations

import base64
import codecs
import html
import json
import os
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import PurePosixPath
from urllib.parse import quote

from sessions_app.containment.secretscan import (
    KEY_REDACTED,
    NO_RULES,
    REDACTED,
    URL_MASK,
    SecretRules,
    mask_text,
    secret_by_name,
)

__all__ = [
    "KEY_REDACTED",
    "REDACTED",
    "URL_MASK",
    "configure_redaction",
    "encodings",
    "is_secret_file",
    "known_secret_values",
    "redact_file",
    "redact_text",
    "redact_userinfo",
    "secret_rules",
    "server_secret_values",
]

# scheme://userinfo@host: the whole user part, for URLs shown to people (redact_userinfo).
_URL_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#@'\"]+@")
# The server's own secrets (names like these in its environment): never echoed to a model,
# whatever path they took (an exception message, a misconfigured tool).
_SECRET_ENV_NAME = re.compile(
    r"SECRET|PASSWORD|PASSWD|TOKEN|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL|DATABASE_URL|_DSN",
    re.IGNORECASE,
)
MIN_SECRET_LENGTH = 8  # of a value found in the environment by its name
MIN_DECLARED_LENGTH = 6  # of a value declared secret (an MCP server's, a setting's)

_rules_provider: Callable[[], SecretRules] = lambda: NO_RULES  # noqa: E731
_values_provider: Callable[[], Iterable[str]] = lambda: ()  # noqa: E731


def configure_redaction(
    *, rules: Callable[[], SecretRules], values: Callable[[], Iterable[str]]
) -> None:
    """Say where the team's rules and the known secret values come from (the app, once)."""
    global _rules_provider, _values_provider
    _rules_provider, _values_provider = rules, values


def secret_rules() -> SecretRules:
    """The team's secret rules now."""
    return _rules_provider()


def is_secret_file(path: str) -> bool:
    """Files whose whole content is a secret (by name: ``.env``, keys, credential files)."""
    return secret_by_name(path, secret_rules())


def server_secret_values() -> list[str]:
    """Values of the server's secret-looking environment variables, longest first."""
    values = {
        value
        for name, value in os.environ.items()
        if len(value) >= MIN_SECRET_LENGTH and _SECRET_ENV_NAME.search(name)
    }
    return sorted(values, key=len, reverse=True)


def known_secret_values() -> tuple[str, ...]:
    """Every secret value acode knows of (its environment's, and the configured provider's:
    settings, MCP servers' declared secrets, model keys, kept current by the provider),
    longest first."""
    provided = (v for v in _values_provider() if v and len(v) >= MIN_DECLARED_LENGTH)
    return tuple(sorted({*server_secret_values(), *provided}, key=len, reverse=True))


def redact_text(text: str, *, path: str = "") -> str:
    """``text`` with every secret masked: URL passwords, what the detector finds (as if
    ``text`` were the file at ``path``; output when empty) and every known secret value in
    any encoding it could have been printed in."""
    rules = secret_rules()
    text = mask_text(text, path, rules)
    if path:  # and as output: what cat of the file would show (so no door shows more)
        text = mask_text(text, "", rules)
    known = _known_pattern(known_secret_values())
    return known.sub(REDACTED, text) if known is not None else text


def redact_userinfo(text: str) -> str:
    """Every URL's whole user part masked (``https://user:token@host`` and
    ``https://token@host`` both become ``https://***@host``): for remotes shown to people,
    where a bare token before the ``@`` is as secret as a password."""
    return _URL_USERINFO.sub(lambda m: f"{m.group('head')}{URL_MASK}@", text)


def redact_file(path: str, text: str) -> str:
    """What a model may see of a file's content."""
    if is_secret_file(path):
        return f"[REDACTED: {PurePosixPath(path).name} holds secrets; its content is not shown]"
    return redact_text(text, path=path)


# What may stand between the characters of a printed secret: a line break (``base64`` and
# ``fold`` wrap), spaces (``xxd``, ``od``, a spaced-out answer), NUL or its replacement
# (UTF-16 printed as bytes).
_BETWEEN = "[\\s\\x00\\ufffd]{0,2}"


@lru_cache(maxsize=8)
def _known_pattern(values: tuple[str, ...]) -> re.Pattern[str] | None:
    forms: set[str] = set()
    for value in values:
        forms.update(encodings(value))
    if not forms:
        return None
    spread = [_BETWEEN.join(re.escape(c) for c in form) for form in forms]
    return re.compile("|".join(sorted(spread, key=len, reverse=True)))


def encodings(value: str) -> set[str]:
    """The forms a secret value takes when a command or a server prints it encoded: itself,
    base64 (standard and URL-safe, at each of the three alignments a longer stream may put
    it at, the part its own bytes decide), base32 likewise, hex, percent-encoding, a JSON
    string's escapes, HTML character references, reversed and rot13."""
    raw = value.encode("utf-8", "surrogateescape")
    forms = {
        value, raw.hex(), raw.hex().upper(), quote(value, safe=""), json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1], html.escape(value),
        "".join(f"&#{ord(c)};" for c in value), "".join(f"&#x{ord(c):x};" for c in value),
        value[::-1], codecs.encode(value, "rot13"),
    }  # fmt: skip
    forms.update(_aligned(raw, base64.b64encode, 3, 6))
    forms.update(
        form.replace("+", "-").replace("/", "_") for form in _aligned(raw, base64.b64encode, 3, 6)
    )
    forms.update(_aligned(raw, base64.b32encode, 5, 5))
    shortest = min(MIN_SECRET_LENGTH, len(value))
    return {form for form in forms if len(form) >= shortest}


def _aligned(raw: bytes, encode: Callable[[bytes], bytes], group: int, bits: int) -> set[str]:
    """The characters of ``encode`` (a base-2^``bits`` code over ``group``-byte blocks) that
    only ``raw``'s own bytes decide, at each alignment a longer stream may put it at."""
    forms = set()
    for shift in range(group):
        encoded = encode(b"\0" * shift + raw).decode()
        # Characters touched by the padding bytes before or after are not the value's own.
        start = -(-shift * 8 // bits) if shift else 0
        end = (len(raw) + shift) * 8 // bits
        core = encoded[start:end]
        if core:
            forms.add(core)
    return forms
