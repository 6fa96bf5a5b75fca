"""Keep secrets out of everything sent to a model: context, tool results, command output."""

from __future__ import annotations

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


# Values that are code, not secrets: type annotations and obvious placeholders.
_NOT_SECRET = re.compile(
    r"^(?:str|int|bool|float|bytes|None|Any|Optional|list|dict|set|tuple|SecretStr|models\.\w+|"
    r"forms\.\w+|serializers\.\w+|os\.environ.*|getenv\(.*|env\w*\(.*|self\.\w+|\w+\(|\{|\[|\(|\*+|<[^>]*>|\$\{?\w+\}?|\[REDACTED\])",
)


def _mask_assignment(match: re.Match[str]) -> str:
    value = match.group("value").strip("\"'")
    if _NOT_SECRET.match(value) or not value:
        return match.group(0)
    return f"{match.group('key')}{match.group('sep')}{REDACTED}"


def is_secret_file(path: str) -> bool:
    """Files whose whole content is a secret (``.env``, keys, credential files)."""
    return bool(_SECRET_FILES.match(PurePosixPath(path).name))


def redact_text(text: str) -> str:
    """Mask private keys, ``password=...``-style assignments and well-known token formats."""
    text = _PRIVATE_KEY.sub("[REDACTED PRIVATE KEY]", text)
    text = _ASSIGNMENT.sub(_mask_assignment, text)
    return _TOKENS.sub(REDACTED, text)


def redact_file(path: str, text: str) -> str:
    """What a model may see of a file's content."""
    if is_secret_file(path):
        return f"[REDACTED: {PurePosixPath(path).name} holds secrets; its content is not shown]"
    return redact_text(text)
