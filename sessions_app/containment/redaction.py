"""Keep secrets out of everything sent to a model: context, tool results, command output."""

from __future__ import annotations

import os
import re
from pathlib import PurePosixPath

REDACTED = "[REDACTED]"

_SECRET_FILES = re.compile(
    r"""^(?:
        \.env(?:\..*)?|.*\.env|\.envrc|\.netrc|\.npmrc|\.pypirc|\.pgpass|
        id_(?:rsa|dsa|ecdsa|ed25519)(?:\.pub)?|.*\.pem|.*\.key|.*\.p12|.*\.pfx|.*\.keystore|
        credentials(?:\..*)?|secrets?(?:\..*)?|.*\.secret
    )$""",
    re.IGNORECASE | re.VERBOSE,
)

_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.DOTALL
)
_ASSIGNMENT = re.compile(
    r"""(?P<key>\b[\w.-]*(?:password|passwd|pwd|secret|api[_-]?key|apikey|token|access[_-]?key|private[_-]?key|auth[_-]?key|client[_-]?secret)[\w.-]*)
        (?P<sep>\s*["']?\s*[:=]\s*)
        (?P<value>"[^"\n]*"|'[^'\n]*'|[^\s,;]+)""",
    re.IGNORECASE | re.VERBOSE,
)
_TOKENS = re.compile(
    r"\b(?:AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|sk-[A-Za-z0-9_-]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20})\b"
)

# scheme://user:password@host (git remotes, database and broker URLs): the password goes.
_URL_CREDENTIALS = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@\[\]'\"]*:)(?P<password>[^\s/?#'\"]+)"
    r"(?=@[^\s@/?#'\"]+(?:[\s/?#'\"]|$))"
)
URL_MASK = "***"
# scheme://userinfo@host: the whole user part, for URLs shown to people (redact_userinfo).
_URL_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#@'\"]+@")
# The server's own secrets (names like these in its environment): never echoed to a model,
# whatever path they took (an exception message, a misconfigured tool).
_SECRET_ENV_NAME = re.compile(
    r"SECRET|PASSWORD|PASSWD|TOKEN|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL|DATABASE_URL|_DSN",
    re.IGNORECASE,
)
MIN_SECRET_LENGTH = 8


# Values that are code, not secrets: type annotations and obvious placeholders.
_NOT_SECRET = re.compile(
    r"^(?:str|int|bool|float|bytes|None|Any|Optional|list|dict|set|tuple|SecretStr|models\.\w+|"
    r"forms\.\w+|serializers\.\w+|os\.environ.*|getenv\(.*|env\w*\(.*|self\.\w+|\w+\(|\{|\[|\(|\*+|<[^>]*>|\$\{?\w+\}?|\[REDACTED\]|[a-z][a-z0-9+.-]*://[^:@\s]*:\*\*\*@)",
)


def _mask_assignment(match: re.Match[str]) -> str:
    value = match.group("value").strip("\"'")
    if _NOT_SECRET.match(value) or not value:
        return match.group(0)
    return f"{match.group('key')}{match.group('sep')}{REDACTED}"


def is_secret_file(path: str) -> bool:
    """Files whose whole content is a secret (``.env``, keys, credential files)."""
    return bool(_SECRET_FILES.match(PurePosixPath(path).name))


def _mask_key(match: re.Match[str]) -> str:
    # As many lines as the key had: line numbers after it (grep results) stay right.
    return "[REDACTED PRIVATE KEY]" + "\n" * match.group(0).count("\n")


def _mask_url(match: re.Match[str]) -> str:
    return f"{match.group('head')}{URL_MASK}"


def server_secret_values() -> list[str]:
    """Values of the server's secret-looking environment variables, longest first."""
    values = {
        value
        for name, value in os.environ.items()
        if len(value) >= MIN_SECRET_LENGTH and _SECRET_ENV_NAME.search(name)
    }
    return sorted(values, key=len, reverse=True)


def redact_text(text: str) -> str:
    """Mask private keys, passwords in URLs, ``password=...``-style assignments, well-known
    token formats and the values of the server's own secret environment variables."""
    text = _PRIVATE_KEY.sub(_mask_key, text)
    text = _URL_CREDENTIALS.sub(_mask_url, text)
    text = _ASSIGNMENT.sub(_mask_assignment, text)
    text = _TOKENS.sub(REDACTED, text)
    for value in server_secret_values():
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def redact_userinfo(text: str) -> str:
    """Every URL's whole user part masked (``https://user:token@host`` and
    ``https://token@host`` both become ``https://***@host``): for remotes shown to people,
    where a bare token before the ``@`` is as secret as a password."""
    return _URL_USERINFO.sub(lambda m: f"{m.group('head')}{URL_MASK}@", text)


def redact_file(path: str, text: str) -> str:
    """What a model may see of a file's content."""
    if is_secret_file(path):
        return f"[REDACTED: {PurePosixPath(path).name} holds secrets; its content is not shown]"
    return redact_text(text)
