"""Secret values written in forms the detector's plugins do not read: a PHP ``define``, an
XML element, an HTTP ``Authorization`` header, a password on a command line, a value on
the line after its name (YAML block scalars, TOML multi-line strings, a parenthesised
Python literal), a private key as a block of lines or escaped onto one line (JSON), and
credentials inside a base64 value (a Docker ``auth``, a Kubernetes Secret's ``data``).

Each rule yields the value alone, judged like a keyword's value (``is_plausible_secret``):
placeholders, references to the environment and names stay visible.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Sequence

from sessions_app.containment.secretvalues import is_plausible_secret, looks_like_token

_SECRET_WORD = r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_\-]?key|apikey|auth|credential|salt|private[_\-]?key)"
# One line, the value in the group named ``v``.
_ON_A_LINE = (
    re.compile(
        rf"(?i)\bdefine\(\s*['\"][\w.\-]*{_SECRET_WORD}[\w.\-]*['\"]\s*,\s*['\"](?P<v>[^'\"\n]{{4,500}})['\"]"
    ),
    re.compile(
        rf"(?i)<(?P<tag>[\w.:\-]*{_SECRET_WORD}[\w.\-]*)(?:\s[^>]*)?>(?P<v>[^<\n]{{4,500}})</"
    ),
    re.compile(
        r"(?i)\b(?:proxy-)?authorization\s*[:=]\s*['\"]?(?:bearer|basic|token|digest|apikey)\s+(?P<v>[\w\-.~+/=:]{8,500})"
    ),
    re.compile(
        r"(?:^|[\s'\"])(?:-u|--user|--proxy-user)[\s=]*['\"]?[^\s:'\"]{1,100}:(?P<v>[^\s'\"@]{4,500})"
    ),
    re.compile(
        r"(?:^|[\s'\"])(?:--password|--passwd|--pass|--token|--api-key|--secret)[\s=]+['\"]?(?P<v>[^\s'\"]{4,500})"
    ),
    re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p(?P<v>[^\s'\"]{4,500})"),
    re.compile(r"(?i)\b(?:password|pwd)\s*=\s*(?P<v>[^;'\"\s]{4,500})\s*(?:;|$|['\"])"),
)
# A private key escaped onto one line ("-----BEGIN ... KEY-----\nMIIE...\n-----END ...").
_ESCAPED_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?P<v>(?:\\[rn]|[A-Za-z0-9+/= ]){16,}?)"
    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[\"',]|$)"
)
# A secret-like name whose value starts on the next line (an opener, or nothing, after it).
_OPENS = re.compile(
    rf"(?i){_SECRET_WORD}[\w.\-\]'\"]{{0,40}}\s*(?::=|=>|[:=])\s*(?:[>|][-+]?\d?|\"\"\"|'''|\(|\[)?\s*$"
)
_NEXT_VALUE = re.compile(
    r"""^\s*[-(]?\s*["']?(?P<v>[^\s"',()]{6,500})["']?\s*[,)]?\s*(?:""" + r'"""' + r"""|''')?\s*$"""
)
BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=_\-])")
_CREDENTIAL_PAIR = re.compile(r"^[\w.\-@]{1,100}:(?P<v>\S{6,})$")

CANDIDATE_FORMS = (
    r"(?i:define\(|<[\w.:\-]*(?:pass|pwd|secret|token|key|auth|credential)|authorization"
    r"|\s-u\s|--user|--pass|--token|--api-key|--secret|mysql|password\s*=)"
)


def form_secrets(line: str) -> Iterable[tuple[str, str]]:
    """The secret values on ``line`` in the forms above, each with its kind."""
    for pattern in _ON_A_LINE:
        for match in pattern.finditer(line):
            value = match.group("v").strip()
            if is_plausible_secret(value) or looks_like_token(value):
                yield "Secret Keyword", value
    for match in _ESCAPED_KEY.finditer(line):
        yield "Private Key", match.group("v")


def next_line_secrets(lines: Sequence[str], number: int) -> Iterable[tuple[int, str]]:
    """A value on the line after ``number`` (1-based) when that line names a secret and
    leaves its value for the next: (line number of the value, value)."""
    if not _OPENS.search(lines[number - 1][:4000]):
        return
    following = number
    while following < len(lines) and not lines[following].strip():
        following += 1
    if following >= len(lines):
        return
    match = _NEXT_VALUE.match(lines[following][:4000])
    if match and (is_plausible_secret(match.group("v")) or looks_like_token(match.group("v"))):
        yield following + 1, match.group("v")


def encoded_secrets(line: str, found_in: Callable[[str], bool]) -> Iterable[str]:
    """Base64 runs on ``line`` whose decoded text holds a credential (``user:password``) or
    a secret ``found_in`` finds."""
    for match in BASE64_RUN.finditer(line):
        run = match.group(0)
        if len(run) % 4 or len(run) > 8192:
            continue
        try:
            decoded = base64.b64decode(run, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            continue
        if not decoded.isprintable() and not decoded.strip().isprintable():
            continue
        pair = _CREDENTIAL_PAIR.match(decoded.strip())
        if (pair and is_plausible_secret(pair.group("v"))) or found_in(decoded):
            yield run


# A private key: its header, at least one line of key material, and (usually) its end.
_KEY_LINE = r"[ \t\"']*[A-Za-z0-9+/=]{%s}[ \t\"',]*(?:\\n)?[ \t\"',]*\n"
_KEY_HEAD = (
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[^\n]*\n"
    r"(?:[A-Za-z0-9-]+: [^\n]*\n|[ \t]*\n)*"  # headers (Proc-Type, DEK-Info) and blanks
)
_KEY_END = r"[ \t\"']*-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
# A private key: its header, key material and its end; or, cut short, a long first line.
_PRIVATE_KEY_BLOCK = re.compile(
    f"{_KEY_HEAD}(?:{_KEY_LINE % '1,'})+{_KEY_END}"
    f"|{_KEY_HEAD}{_KEY_LINE % '16,'}(?:{_KEY_LINE % '1,'})*"
)


def key_block_lines(text: str) -> frozenset[int]:
    """The lines (1-based) of every private key block in ``text``."""
    lines: set[int] = set()
    for match in _PRIVATE_KEY_BLOCK.finditer(text):
        first = text.count("\n", 0, match.start()) + 1
        last = first + match.group(0).count("\n")
        lines.update(range(first, last + 1))
    return frozenset(lines)


URL_MASK = "***"
# scheme://user:password@host (git remotes, database and broker URLs): the password goes.
_URL_CREDENTIALS = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@\[\]'\"]*:)(?P<password>[^\s/?#'\"]+)"
    r"(?=@[^\s@/?#'\"]+(?:[\s/?#'\"]|$))"
)


# A URL's password that only says where one goes (an example's), or refers to one.
_URL_PLACEHOLDER = re.compile(
    r"(?i)^(?:password|passwd|pass|pwd|secret|changeme|change-me|placeholder|example|x{3,}|\*+"
    r"|(?:your|my|some)[-_]?password|<[^>]*>|\{\{?[^}]*\}\}?|\$\{?\w+\}?|%\(?\w+\)?s?)$"
)


def _url_masked(match: re.Match[str]) -> str:
    if _URL_PLACEHOLDER.match(match.group("password")):
        return match.group(0)
    return f"{match.group('head')}{URL_MASK}"


def url_passwords_masked(text: str) -> str:
    """``text`` with the password of every URL masked (``scheme://user:***@host``), unless
    it only says where one goes."""
    return _URL_CREDENTIALS.sub(_url_masked, text)
