"""Whether a value found after a secret-like name could be a secret: code, numbers, URLs
without credentials, file names, placeholders, names and references are not."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import PurePosixPath

OUTPUT_NAME = "output.cfg"  # what output (text of no file) is scanned as

_TOKEN_ALPHABET = re.compile(r"^[A-Za-z0-9_\-+/=.~]{16,}$")
# Names that describe a secret rather than hold one (its type, field, variable, header...).
_ABOUT_A_SECRET = re.compile(
    r"(?i)(?:_|-|\b)(?:type|name|names|field|fields|prefix|suffix|url|uri|path|file|header|"
    r"length|len|label|env|var|key_name|id|policy|format|pattern|regex|hint|help|error|"
    r"message|title|placeholder|validator|hash(?:er)?|kind|count|limit|chars|alphabet)[\"'\]]?$"
)
# Values people write where a secret would go (examples, defaults of local services).
PLACEHOLDERS = frozenset({
    "pass", "passwd", "password", "password1", "password123", "secret", "secret123", "guest",
    "tiger", "scott", "postgres", "root", "admin", "changeme", "change-me", "example",
    "somepassword", "mypassword", "yourpassword", "your-password", "your_password", "test",
    "testing", "user", "username", "dummy", "fake", "sample", "masterkey", "letmein",
    "hunter2", "foobar", "foo", "bar", "xxx", "pwd", "pw", "s3cr3t", "redacted",
})  # fmt: skip
# Values that are code or configuration, not secrets.
_NOT_A_VALUE = re.compile(
    r"""(?x)^(?:
        [-+]?\d[\d_.,]*[kKmMgG]?|(?i:true|false|yes|no|on|off|null|none|nil|undefined)|
        [A-Za-z][\w+.\-]*://[^\s@]*|           # a URL without credentials
        (?:str|int|bool|float|bytes|Any|Optional\[.*|SecretStr|list|dict|set|tuple)|
        (?:os\.environ|os\.getenv|getenv|env|ENV|process\.env|settings|config|self|this|
           request|options|args|kwargs)\b.*|
        \$\{?\w+\}?|%\(?\w+\)?s?|\{\{.*\}\}|<[^>]*>|\*+|[xX]+|\.\.\.|\[REDACTED[^\]]*\]|
        [\w.]+\(.*|[A-Z][A-Z0-9_]*
    )$"""
)


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


CODE_SUFFIXES = frozenset({
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".rb", ".java", ".kt",
    ".scala", ".rs", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift", ".m", ".php", ".pl",
    ".lua", ".dart", ".ex", ".exs", ".erl", ".clj", ".groovy", ".sh", ".bash", ".zsh",
})  # fmt: skip
_FILE_NAME = re.compile(r"^[\w.\-/]+\.[A-Za-z][A-Za-z0-9]{0,4}$")
_IDENTIFIER = re.compile(
    r"^(?:[a-z]+(?:_[a-z]+)+\d?|[a-z]+(?:[A-Z]+[a-z]*)+\d{0,3}|[A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+"
    r"|(?:string|number|boolean|object|array|integer)\??)$"
)


def is_plausible_secret(value: str, key: str = "", *, code: bool = False) -> bool:
    """A value after a secret-like name ``key`` that could be a secret: not code (in a code
    file, ``code``: nor text with spaces), a number, a URL without credentials, a file name,
    a placeholder, the key's own name or an environment reference."""
    value = value.strip().strip("\"'`").strip()
    if len(value) < 6 or _NOT_A_VALUE.match(value) or value.lower() in PLACEHOLDERS:
        return False
    if key and _ABOUT_A_SECRET.search(key.strip()):
        return False
    if _IDENTIFIER.match(value) or _FILE_NAME.match(value) or (code and " " in value):
        return False
    if any(mark in value for mark in ("(", ")", "->", "=>")) or value.endswith((":", ",")):
        return False  # an expression or a signature, not a value
    bare = re.sub(r"[\W_]", "", value).lower()
    if key and bare == re.sub(r"[\W_]", "", key.split(".")[-1]).lower():
        return False
    return not (value.isalpha() and value.islower() and len(value) < 12)


def is_code(path: str) -> bool:
    """Whether ``path`` is source code (secrets in it are quoted literals); output (no path)
    is judged like code: it is mostly code and logs, and a value with spaces is prose."""
    return path in ("", OUTPUT_NAME) or PurePosixPath(path).suffix.lower() in CODE_SUFFIXES


def looks_like_token(value: str) -> bool:
    """A value written in the alphabet tokens use, with a digit, random enough to be one."""
    return bool(
        _TOKEN_ALPHABET.match(value) and any(c.isdigit() for c in value) and _entropy(value) >= 3.5
    )
