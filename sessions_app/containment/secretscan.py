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
judged by its content), numbers, URLs without credentials, placeholders and references to
the environment (``MAX_TOKENS = 4096``, ``TOKEN_URL = "https://..."``,
``password = os.environ["PASSWORD"]``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import PurePosixPath
from typing import Any

from detect_secrets.filters import allowlist, heuristic
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.util.code_snippet import get_code_snippet

from acode.patterns import compile_re2
from roles.access import path_allowed

# -- secret by name -------------------------------------------------------------------
_SECRET_NAMES = re.compile(
    r"""^(?:
        \.env(?:\..*)?|.*\.env|\.envrc|\.netrc|_netrc|\.npmrc|\.yarnrc(?:\.yml)?|\.pypirc|\.pgpass|
        \.my\.cnf|\.git-credentials|\.gitcookies|\.vault-token|\.htpasswd|\.s3cfg|\.boto|
        \.dockercfg|\.terraformrc|terraform\.rc|\.tfvars|.*\.tfvars(?:\.json)?|
        terraform\.tfstate(?:\.backup)?|.*\.tfstate|kubeconfig(?:\..*)?|
        id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?(?:\.pub)?|.*\.pem|.*\.key|.*\.p12|.*\.pfx|
        .*\.keystore|.*\.jks|.*\.ppk|.*\.asc|.*\.gpg|.*\.pgp|.*\.kdbx|.*\.keytab|.*\.ovpn|
        credentials|credentials\.(?:json|ya?ml|toml|ini|xml|csv|txt|cfg|conf)|
        client_secrets?(?:_.*)?\.json|.*service[-_]account.*\.json|
        secrets?|secrets?\.(?:json|ya?ml|toml|ini|xml|txt|cfg|conf|env|properties)|.*\.secrets?|
        wp-config\.php|local\.settings\.json|auth\.json|\.composer-auth\.json|
        \.credentials(?:\.json)?|\.token|.*\.token|token\.json
    )$""",
    re.IGNORECASE | re.VERBOSE,
)
# Files secret by the directory they are in (the whole directory is a credential store).
_SECRET_DIRS = {
    ".ssh": None,  # every file in it
    ".gnupg": None,
    ".aws": None,
    ".docker": {"config.json"},
    ".kube": {"config"},
    ".azure": None,
    "gcloud": {"credentials.db", "access_tokens.db", "application_default_credentials.json"},
    ".cargo": {"credentials", "credentials.toml"},
    ".gem": {"credentials"},
    ".config": None,  # checked further below (gh/hosts.yml, hub, ...)
}
_CONFIG_SECRETS = re.compile(
    r"^(?:gh/hosts\.ya?ml|hub|gcloud/.*|git/credentials|rclone/rclone\.conf|pip/pip\.conf)$"
)


@dataclass(frozen=True)
class SecretRules:
    """A team's additions to the detector: ``patterns`` (RE2 syntax, linear time) mark
    secrets in any file or output (the match, or its group named ``secret``);
    ``allow_paths`` (write-path globs) are files never hidden for their name or content;
    ``allow_values`` (RE2) are values known not to be secrets."""

    patterns: tuple[str, ...] = ()
    allow_paths: tuple[str, ...] = ()
    allow_values: tuple[str, ...] = ()

    @property
    def version(self) -> str:
        """Changes whenever what the detector decides could change (rules or detector)."""
        data = json.dumps([DETECTOR_VERSION, self.patterns, self.allow_paths, self.allow_values])
        return hashlib.sha256(data.encode()).hexdigest()[:16]


NO_RULES = SecretRules()
DETECTOR_VERSION = "2"  # bump when the built-in rules change: indexes are scanned again


def secret_by_name(path: str, rules: SecretRules = NO_RULES) -> bool:
    """Whether the file at ``path`` (workspace-relative) is a secret for its name alone."""
    if rules.allow_paths and path_allowed(path, rules.allow_paths):
        return False
    parts = PurePosixPath(path).parts
    if not parts:
        return False
    if _SECRET_NAMES.match(parts[-1]):
        return True
    for index, part in enumerate(parts[:-1]):
        if part in _SECRET_DIRS:
            names = _SECRET_DIRS[part]
            rest = "/".join(parts[index + 1 :])
            if part == ".config":
                if _CONFIG_SECRETS.match(rest):
                    return True
            elif names is None or rest in names:
                return True
    return False


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
SNIFF = 8192
OUTPUT_NAME = "output.cfg"  # what output (text of no file) is scanned as


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
    r"^(?:[a-z]+(?:_[a-z]+)+\d?|[a-z]+(?:[A-Z][a-z0-9]*)+|[A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+"
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


@cache
def _plugins() -> tuple[BasePlugin, ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    found = get_mapping_from_secret_type_to_class().values()
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


def scan_text(path: str, text: str, rules: SecretRules = NO_RULES) -> Scan:
    """The secret values in ``text`` (a file at ``path``, or a tool's output with path "")."""
    if rules.allow_paths and path and path_allowed(path, rules.allow_paths):
        return Scan()
    filename = path or OUTPUT_NAME  # output: configuration-style keyword rules
    text = _scannable(text)
    lines = text.split("\n")
    candidates = _candidate_lines(text, lines, rules)
    findings: set[Finding] = set()
    allowed_values = _rule_patterns(rules.allow_values)
    for number in sorted(candidates):
        line = lines[number - 1][:4000]
        context = get_code_snippet(lines, number)
        if allowlist.is_line_allowlisted(filename, line, context):
            continue
        for kind, value in _line_secrets(filename, line, number, rules):
            if any(p.search(value) for p in allowed_values):
                continue
            start = line.find(value)
            if start >= 0 and value:
                findings.add(Finding(number, start, start + len(value), kind))
    blocks = _key_block_lines(text)
    return Scan(tuple(sorted(findings, key=lambda f: (f.line, f.start))), blocks)


def _scannable(text: str) -> str:
    """``text`` with lone surrogates as "?" (one character each: positions stay right)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _candidate_lines(text: str, lines: Sequence[str], rules: SecretRules) -> set[int]:
    starts, offset = [], 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    found: set[int] = set()
    patterns: list[Any] = [_CANDIDATE, *_rule_patterns(rules.patterns)]
    import bisect

    for pattern in patterns:
        for match in pattern.finditer(text):
            found.add(bisect.bisect_right(starts, match.start()))
    return found


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
        if not _looks_like_token(value) or not is_plausible_secret(value, key, code=code):
            continue
        if not _filtered(value, line, None, filename):
            yield "Token Keyword", value
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


def _looks_like_token(value: str) -> bool:
    return bool(
        _TOKEN_ALPHABET.match(value) and any(c.isdigit() for c in value) and _entropy(value) >= 3.5
    )


def _key_block_lines(text: str) -> frozenset[int]:
    lines: set[int] = set()
    for match in _PRIVATE_KEY_BLOCK.finditer(text):
        first = text.count("\n", 0, match.start()) + 1
        last = first + match.group(0).count("\n")
        lines.update(range(first, last + 1))
    return frozenset(lines)


REDACTED = "[REDACTED]"
KEY_REDACTED = "[REDACTED PRIVATE KEY]"
URL_MASK = "***"
# scheme://user:password@host (git remotes, database and broker URLs): the password goes.
_URL_CREDENTIALS = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@\[\]'\"]*:)(?P<password>[^\s/?#'\"]+)"
    r"(?=@[^\s@/?#'\"]+(?:[\s/?#'\"]|$))"
)


def mask_text(text: str, path: str = "", rules: SecretRules = NO_RULES) -> str:
    """``text`` (the file at ``path``, or output when "") with the passwords in URLs and
    every secret the detector finds masked: what a role sees of it, at every door."""
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group('head')}{URL_MASK}", text)
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
