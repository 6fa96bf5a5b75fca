"""Dangerous prompt text: patterns a prompt, a role's text or an import must not carry."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from acode.errors import AcodeError

_DANGEROUS: list[tuple[str, re.Pattern[str]]] = [
    (
        "download piped into a shell",
        re.compile(r"\b(?:curl|wget)\b[^\n|]*\|\s*(?:sudo\s+)?(?:ba|z|k|da|fi)?sh\b", re.I),
    ),
    (
        "HTTP request with curl or wget",
        re.compile(r"\b(?:curl|wget)\s+(?:-\S+\s+)*['\"]?https?://", re.I),
    ),
    ("reads SSH keys", re.compile(r"(?:~|\$HOME|\$\{HOME\})/\.ssh\b|\.ssh/id_\w+", re.I)),
    (
        "recursive forced delete",
        re.compile(r"\brm\s+(?:-\w*r\w*f\w*|-\w*f\w*r\w*|-r\s+-f|-f\s+-r)\b", re.I),
    ),
    ("world-writable permissions", re.compile(r"\bchmod\s+(?:-R\s+)?0?777\b", re.I)),
    ("eval call", re.compile(r"\beval\s*\(", re.I)),
]


@dataclass(frozen=True)
class PromptFinding:
    """One dangerous match in a prompt text."""

    rule: str
    match: str
    line: int


def find_dangerous(text: str) -> list[PromptFinding]:
    """Every dangerous pattern match in ``text`` (spec, Threat 3), with its line number."""
    findings: list[PromptFinding] = []
    for rule, pattern in _DANGEROUS:
        for m in pattern.finditer(text):
            findings.append(PromptFinding(rule, m.group(0), text.count("\n", 0, m.start()) + 1))
    return findings


def text_findings(where: str, text: str) -> list[dict[str, Any]]:
    """Dangerous matches in ``text`` as audit-ready dicts naming ``where`` they are."""
    return [
        {"where": where, "rule": f.rule, "match": f.match, "line": f.line}
        for f in find_dangerous(text)
    ]


def describe_findings(findings: list[dict[str, Any]]) -> str:
    """One line naming every finding and the text it matched."""
    return "; ".join(f"{f['where']}: {f['rule']}: {f['match']!r}" for f in findings)


def check_prompt_text(key: str, text: str, *, where: str = "prompt") -> None:
    """Raise ACODE-PRM-001 naming the matched text if ``text`` is dangerous."""
    findings = find_dangerous(text)
    if findings:
        described = "; ".join(f"{f.rule}: {f.match!r} (line {f.line})" for f in findings)
        raise AcodeError(
            "ACODE-PRM-001",
            f"Dangerous content in {where} {key!r}: {described}",
            {"key": key, "findings": text_findings(f"{where} {key}", text)},
        )
