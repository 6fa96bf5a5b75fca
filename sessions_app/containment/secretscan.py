"""What is a secret: files by name, and secret values by content.

One detector answers for every door (the secret-file index, what commands and MCP servers
see, ``read_file``, search, context, command output, audit rows): a file is secret by its
name (``.env``, keys, credential stores...) or holds secrets by its content, found with
Yelp's ``detect-secrets`` plugins (well-known token formats, private keys, passwords and
other keyword assignments, credentials in URLs) and a team's own patterns.

``detect-secrets`` was chosen over the other scanners the registries hold: ``ggshield``
needs GitGuardian's online service, ``trufflehog`` (Python) is unmaintained since 2021 and
looks only at entropy, ``whispers`` parses structured files only and ``secretscanner`` is a
small regex list. ``detect-secrets`` runs offline, its plugins are kept by Yelp, and its
heuristic filters (templated values, ids, sequences, indirect references) keep code that
holds no secret visible. Its entropy plugins are left out: in code they flag digests and
test fixtures, which would hide work that is not secret; a quoted high-entropy value after
a secret-like keyword (``token = "..."``) is found by the keyword rules instead.

What does not make a file secret: a name that is a code module (``credentials.py`` is
judged by its content), numbers, URLs without credentials (or with a placeholder for the
password: ``postgres://user:password@localhost``), placeholders and references to the
environment (``MAX_TOKENS = 4096``, ``TOKEN_URL = "https://..."``,
``password = os.environ["PASSWORD"]``). Files that may hold a secret or not (``*.pem``: a
certificate or a key; ``.yarnrc.yml``; ``.env.example``; an ``auth.json`` below the top)
are judged by their content.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from detect_secrets.filters import allowlist, heuristic
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.util.code_snippet import get_code_snippet

from acode.patterns import compile_re2
from roles.writes import path_allowed
from sessions_app.containment.secretforms import (
    BASE64_RUN,
    CANDIDATE_FORMS,
    URL_MASK,
    encoded_secrets,
    form_secrets,
    key_block_lines,
    next_line_secrets,
    url_passwords_masked,
)
from sessions_app.containment.secretnames import (
    DETECTOR_VERSION,
    NO_RULES,
    SecretRules,
    secret_by_name,
)
from sessions_app.containment.secretvalues import (
    OUTPUT_NAME,
    is_code,
    is_plausible_secret,
    looks_like_token,
)

__all__ = [
    "DETECTOR_VERSION",
    "KEY_REDACTED",
    "NO_RULES",
    "REDACTED",
    "URL_MASK",
    "Finding",
    "Scan",
    "SecretRules",
    "apply_scan",
    "is_binary",
    "is_plausible_secret",
    "mask_text",
    "scan_text",
    "secret_by_name",
]


# -- secret by content ------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    """A secret value on one line: 1-based ``line``, the value's span on it, and what it is."""

    line: int
    start: int
    end: int
    kind: str


@dataclass(frozen=True)
class Scan:
    """What the detector found in one text (``block_lines``: lines of private keys)."""

    findings: tuple[Finding, ...] = ()
    block_lines: frozenset[int] = field(default_factory=frozenset)

    def __bool__(self) -> bool:
        return bool(self.findings or self.block_lines)

    def as_json(self) -> list[Any]:
        return [[f.line, f.start, f.end, f.kind] for f in self.findings] + [
            ["block", sorted(self.block_lines)]
        ]

    @classmethod
    def from_json(cls, data: list[Any]) -> Scan:
        findings, blocks = [], frozenset[int]()
        for item in data:
            if item and item[0] == "block":
                blocks = frozenset(int(n) for n in item[1])
            else:
                findings.append(Finding(int(item[0]), int(item[1]), int(item[2]), str(item[3])))
        return cls(tuple(findings), blocks)


_PLUGIN_NAMES = (
    "ArtifactoryDetector", "AWSKeyDetector", "AzureStorageKeyDetector", "BasicAuthDetector",
    "CloudantDetector", "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector",
    "IbmCloudIamDetector", "IbmCosHmacDetector", "JwtTokenDetector", "KeywordDetector",
    "MailchimpDetector", "NpmDetector", "OpenAIDetector", "PrivateKeyDetector",
    "PypiTokenDetector", "SendGridDetector", "SlackDetector", "SoftlayerDetector",
    "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
)  # fmt: skip

# A line worth handing to the plugins: a secret-like word followed by an assignment, or a
# well-known token prefix, a key block or credentials in a URL. Most lines of code have none,
# and the plugins cost far more per line than this one pass over the text.
_CANDIDATE = compile_re2(
    r"(?i)(?:pass|pwd|secret|token|key|auth|credential|bearer|contrase|session|cookie|signature)"
    r"[\w.\-\]'\"]{0,40}\s*(?::=|=>|==|!=|[:=])\s*\S"
    r"|-----BEGIN|://[^/\s:@]{1,200}:[^/\s@]{1,200}@"
    r"|\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|gh[pousr]_|github_pat_|glpat-|glptt-"
    r"|xox[abposr]-|sk-|sk_live|rk_live|pk_live|SG\.|AIza|eyJ|npm_|pypi-|sq0|AKC|AccountKey"
    r"|(?i:cloudant|softlayer|ibm)|AC[0-9a-f]{32}|SK[0-9a-f]{32}|hooks\.slack)"
    r"|\b\d{8,10}:[\w\-]{35}|[MNO][\w\-]{23,25}\.[\w\-]{6}\.[\w\-]{27}|[0-9a-f]{32}-us\d"
)
# Keyword values the plugins do not know (detect-secrets' keyword list has no "token"): a
# quoted or bare value in the alphabet tokens are written in, random enough to be one.
_TOKEN_KEY = re.compile(
    r"""(?ix)
    (?P<key>\b[\w.\-]*(?:token|bearer|session[_\-]?key|signing[_\-]?key|cookie[_\-]?secret)[\w\-]*)
    ["']?\s*(?::=|=>|[:=])\s*
    (?P<value>"[^"\n]{1,500}"|'[^'\n]{1,500}'|[^\s,;'"]{1,500})
    """
)
_FORM_CANDIDATE = compile_re2(CANDIDATE_FORMS)
SNIFF = 8192


@cache
def _plugins() -> tuple[BasePlugin, ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    found: Any = get_mapping_from_secret_type_to_class().values()
    classes: dict[str, Any] = {c.__name__: c for c in found}
    return tuple(classes[name]() for name in _PLUGIN_NAMES)


@cache
def _rule_patterns(patterns: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(compile_re2(p) for p in patterns)


def _filtered(secret: str, line: str, plugin: BasePlugin | None, filename: str) -> bool:
    return bool(
        heuristic.is_sequential_string(secret)
        or heuristic.is_potential_uuid(secret)
        or heuristic.is_likely_id_string(secret, line, plugin)
        or heuristic.is_templated_secret(secret)
        or heuristic.is_prefixed_with_dollar_sign(secret)
        or heuristic.is_indirect_reference(line)
        or heuristic.is_lock_file(filename)
        or heuristic.is_not_alphanumeric_string(secret)
    )


def scan_text(path: str, text: str, rules: SecretRules = NO_RULES, *, nested: bool = False) -> Scan:
    """The secret values in ``text`` (a file at ``path``, or a tool's output with path "");
    ``nested``: ``text`` was decoded from a value of another text (not decoded again)."""
    if rules.allow_paths and path and path_allowed(path, rules.allow_paths):
        return Scan()
    filename = path or OUTPUT_NAME  # output: configuration-style keyword rules
    text = _scannable(text)
    lines = text.split("\n")
    findings: set[Finding] = set()
    allowed_values = _rule_patterns(rules.allow_values)

    def add(number: int, kind: str, value: str) -> None:
        if value and not any(p.search(value) for p in allowed_values):
            whole = lines[number - 1]
            start = whole.find(value)
            while start >= 0:
                findings.add(Finding(number, start, start + len(value), kind))
                start = whole.find(value, start + len(value))

    for number, columns in sorted(_candidate_lines(text, lines, rules).items()):
        for line in _windows(lines[number - 1], columns):
            if allowlist.is_line_allowlisted(filename, line, get_code_snippet(lines, number)):
                continue
            for kind, value in _line_secrets(filename, line, number, rules):
                add(number, kind, value)
        for at, value in next_line_secrets(lines, number):
            add(at, "Secret Keyword", value)
    if not nested:
        for number in _base64_lines(text, lines):
            for value in encoded_secrets(
                lines[number - 1], lambda decoded: bool(scan_text("", decoded, rules, nested=True))
            ):
                add(number, "Encoded Secret", value)
    blocks = key_block_lines(text.replace("\r", ""))
    return Scan(tuple(sorted(findings, key=lambda f: (f.line, f.start))), blocks)


WINDOW = 4000  # characters of a line around each candidate the plugins read


def _windows(line: str, columns: Sequence[int]) -> Iterable[str]:
    """``line`` itself when short; else the part around each candidate (minified code)."""
    if len(line) <= WINDOW:
        yield line
        return
    last = -WINDOW
    for column in sorted(columns):
        if column - last >= WINDOW // 2:
            last = column
            yield line[max(0, column - WINDOW // 2) : column + WINDOW // 2]


def _scannable(text: str) -> str:
    """``text`` with lone surrogates as "?" (one character each: positions stay right)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _line_starts(lines: Sequence[str]) -> list[int]:
    starts, offset = [], 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    return starts


def _candidate_lines(text: str, lines: Sequence[str], rules: SecretRules) -> dict[int, list[int]]:
    """Lines worth handing to the plugins (1-based), with the columns of what matched."""
    starts = _line_starts(lines)
    found: dict[int, list[int]] = {}
    for pattern in (_CANDIDATE, _FORM_CANDIDATE, *_rule_patterns(rules.patterns)):
        for match in pattern.finditer(text):
            number = bisect.bisect_right(starts, match.start())
            found.setdefault(number, []).append(match.start() - starts[number - 1])
    return found


def _base64_lines(text: str, lines: Sequence[str]) -> list[int]:
    starts = _line_starts(lines)
    return sorted(
        {
            bisect.bisect_right(starts, m.start())
            for m in BASE64_RUN.finditer(text)
            if not len(m.group(0)) % 4
        }
    )


def _line_secrets(
    filename: str, line: str, number: int, rules: SecretRules
) -> Iterable[tuple[str, str]]:
    for plugin in _plugins():
        yield from _plugin_secrets(plugin, filename, line, number)
    code = is_code(filename)
    for match in _TOKEN_KEY.finditer(line):
        quoted = match.group("value")[:1] in "\"'"
        value = match.group("value").strip("\"'")
        if code and not quoted:
            continue  # in code, a bare value is a name
        key = match.group("key")
        if not looks_like_token(value) or not is_plausible_secret(value, key, code=code):
            continue
        if not _filtered(value, line, None, filename):
            yield "Token Keyword", value
    for kind, value in form_secrets(line):
        if not _filtered(value, line, None, filename) or kind == "Private Key":
            yield kind, value
    for pattern in _rule_patterns(rules.patterns):
        for match in pattern.finditer(line):
            groups = match.groupdict() if hasattr(match, "groupdict") else {}
            value = groups.get("secret") or match.group(0)
            if value:
                yield "Team Pattern", value


# These plugins say which part of a line is the secret (a keyword's value, a URL's
# password); the others match whole tokens, whose full match is the secret.
_VALUE_PLUGINS = frozenset({"KeywordDetector", "BasicAuthDetector"})


def _plugin_secrets(
    plugin: BasePlugin, filename: str, line: str, number: int
) -> Iterable[tuple[str, str]]:
    name = type(plugin).__name__
    try:
        if name in _VALUE_PLUGINS:
            found = [
                (s.type, s.secret_value or "")
                for s in plugin.analyze_line(filename=filename, line=line, line_number=number)
            ]
        elif name == "PrivateKeyDetector":  # key blocks are found whole (_key_block_lines)
            found = []
        else:
            found = [
                (plugin.secret_type, match.group(0))
                for regex in getattr(plugin, "denylist", ())
                for match in regex.finditer(line)
            ]
    except Exception:  # a plugin must never stop the scan; the others still run
        return
    for kind, value in found:
        if not value or _filtered(value, line, plugin, filename):
            continue
        key = _key_before(line, value)
        if name in _VALUE_PLUGINS and not is_plausible_secret(value, key, code=is_code(filename)):
            continue
        yield kind, value


def _key_before(line: str, value: str) -> str:
    """The name a value is assigned to on ``line`` (the word before it), if any."""
    head = line[: max(line.find(value), 0)]
    names = re.findall(r"[\w.\-]+", head)
    return names[-1] if names else ""


REDACTED = "[REDACTED]"
KEY_REDACTED = "[REDACTED PRIVATE KEY]"


def mask_text(text: str, path: str = "", rules: SecretRules = NO_RULES) -> str:
    """``text`` (the file at ``path``, or output when "") with the passwords in URLs and
    every secret the detector finds masked: what a role sees of it, at every door."""
    text = url_passwords_masked(text)
    return apply_scan(text, scan_text(path, text, rules))


def apply_scan(text: str, scan: Scan) -> str:
    """``text`` with every finding masked; a private key's lines become one marker followed
    by as many empty lines, so line numbers after it stay right."""
    if not scan:
        return text
    lines = text.split("\n")
    by_line: dict[int, list[Finding]] = {}
    for finding in scan.findings:
        by_line.setdefault(finding.line, []).append(finding)
    for number, found in by_line.items():
        line = lines[number - 1]
        for start, end in reversed(_merged(found)):
            line = line[:start] + REDACTED + line[end:]
        lines[number - 1] = line
    first = True
    for number in sorted(scan.block_lines):
        lines[number - 1] = KEY_REDACTED if first or number - 1 not in scan.block_lines else ""
        first = False
    return "\n".join(lines)


def _merged(found: list[Finding]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for finding in sorted(found, key=lambda f: f.start):
        if spans and finding.start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], finding.end))
        else:
            spans.append((finding.start, finding.end))
    return spans


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:SNIFF]
