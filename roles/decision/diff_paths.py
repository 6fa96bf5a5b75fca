"""Write globs and legacy command patterns as automata: which paths (or joined commands) one
list of patterns matches that another does not, decided exactly, with the shortest example.

A write glob is the regular language ``roles.writes.path_allowed`` matches (``**`` any
directories, ``*`` and ``?`` within one); a legacy command pattern is ``fnmatch``'s
(``*`` anything, ``?`` one character, ``[...]`` a class). Both become finite automata
(``interegular``: a kept, pure-Python library, about 30 times faster to build automata with
than ``greenery`` here), and ``L(new) - L(old)`` is decided exactly. Only the old patterns
whose literal prefix is compatible with the new one's can share a string with it, so only
those are built (a role with 200 globs is compared in milliseconds).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from interegular import parse_pattern
from interegular.fsm import FSM, Alphabet
from interegular.patterns import REFlags

_NO_FLAGS = REFlags(0)
# The paths a counterexample prefers: plain names a reader recognises (others are still
# found when only they differ).
_PLAIN_PATH = r"[a-z0-9_][a-z0-9_.-]*(/[a-z0-9_][a-z0-9_.-]*)*"
# Names with control characters are refused whatever the globs say (``roles.access``).
_NAMEABLE = r"[^\x00-\x1f\x7f-\x9f]*"
_GLOB_SPECIAL = re.compile(r"\*\*/|\*\*|\*|\?")


def glob_regex(glob: str) -> str:
    """A write glob's language as a regular expression interegular reads (wcmatch's own
    translation, which ``roles.globs`` matches with, has anchors and lookarounds it does
    not); tests/roles/test_globs.py holds the two to one meaning."""
    out: list[str] = []
    position = 0
    for match in _GLOB_SPECIAL.finditer(glob):
        out.append(re.escape(glob[position : match.start()]))
        token = match.group()
        out.append({"**/": "(.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}[token])
        position = match.end()
    out.append(re.escape(glob[position:]))
    return "".join(out)


def fnmatch_regex(pattern: str) -> str | None:
    """``fnmatch``'s language of a pattern as a regular expression; None when it holds a
    bracket form this translation does not take on (then the caller is conservative)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        i += 1
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(char))
                continue
            body = _bracket(pattern[i:end])
            if body is None:
                return None
            out.append(body)
            i = end + 1
        else:
            out.append(re.escape(char))
    return "".join(out)


_LETTER = r"[A-Za-z0-9_.]"
_BRACKET = re.compile(rf"!?-?(?:{_LETTER}(?:-{_LETTER})?)+-?")


def _bracket(body: str) -> str | None:
    """An fnmatch bracket's characters as a regular expression class: ``a-s`` a range, a
    hyphen first or last itself, ``!`` first the complement; None for any other form (a
    reversed range, ``a-c-e``, other characters)."""
    if not _BRACKET.fullmatch(body):
        return None
    negated = body.startswith("!")
    letters = body[1:] if negated else body
    lead, trail = letters.startswith("-"), letters.endswith("-") and len(letters) > 1
    inner = letters[1 if lead else 0 : len(letters) - 1 if trail else len(letters)]
    ranges = re.findall(rf"({_LETTER})-({_LETTER})", inner)
    if any(a > b for a, b in ranges):
        return None
    hyphen = "\\-" if lead or trail else ""
    return "[" + ("^" if negated else "") + hyphen + inner.replace(".", "\\.") + "]"


def literal_prefix(pattern: str, special: str) -> str:
    """The characters every string of ``pattern`` starts with (up to its first special)."""
    cut = min((pattern.find(c) for c in special if c in pattern), default=len(pattern))
    return pattern[:cut]


def _compatible(a: str, b: str) -> bool:
    return a.startswith(b) or b.startswith(a)


def language_gain(
    new: Sequence[str], old: Sequence[str], *, kind: str = "glob"
) -> tuple[bool, str | None]:
    """Whether patterns ``new`` match a string none of ``old`` matches, and the shortest such
    string (preferring plain path names). ``kind``: "glob" (write globs) or "fnmatch"
    (legacy command patterns). An empty ``old`` matches nothing here (the callers give an
    empty glob list its meaning, anywhere). (True, None) when a pattern cannot be
    translated: the caller counts it as a gain, conservatively."""
    special = "*?" if kind == "glob" else "*?["
    translate = glob_regex if kind == "glob" else fnmatch_regex
    old_set = set(old)
    for pattern in dict.fromkeys(new):
        if pattern in old_set:
            continue
        source = translate(pattern)
        if source is None:
            return True, None
        prefix = literal_prefix(pattern, special)
        relevant = [translate(o) for o in old if _compatible(literal_prefix(o, special), prefix)]
        if any(r is None for r in relevant):
            return True, None
        plain = [r for r in relevant if r is not None]
        sample = next((t for t in _samples(pattern, kind) if not matches_any(t, plain)), None)
        if sample is not None:  # a plain string the pattern matches and no old one does
            return True, sample
        example = _difference_example(source, tuple(plain))
        if example is not None:
            return True, example
    return False, None


@lru_cache(maxsize=4096)
def _parsed(source: str) -> Any:
    return parse_pattern(source)


def search_pattern_included(new: str, old: str) -> bool:
    """Whether every string JSON Schema's ``pattern`` ``new`` finds a match in, ``old`` does
    too (patterns search, unless anchored with ``^...$``); False when unsure (a syntax
    the automata library does not read)."""
    try:
        return _difference_example(_searched(new), (_searched(old),), nameable=False) is None
    except Exception:  # an unreadable pattern is simply not proven
        return False


def _searched(pattern: str) -> str:
    """A ``pattern`` that searches, as one that matches whole strings."""
    head = "" if pattern.startswith("^") else r"[\s\S]*"
    body = pattern.removeprefix("^")
    tail = r"[\s\S]*"
    if body.endswith("$") and not body.endswith("\\$"):
        body, tail = body[:-1], ""
    return f"{head}(?:{body}){tail}"


def _difference_example(
    source: str, others: tuple[str, ...], *, nameable: bool = True
) -> str | None:
    """The shortest string ``source`` matches and none of ``others`` does, or None
    (``nameable``: only strings without control characters, as file names are)."""
    universe = _NAMEABLE if nameable else r"[\s\S]*"
    patterns = [_parsed(source), *(_parsed(o) for o in others), _parsed(universe),
                _parsed(_PLAIN_PATH)]  # fmt: skip
    alphabet, _ = Alphabet.union(*(p.get_alphabet(_NO_FLAGS) for p in patterns))
    machines = [p.to_fsm(alphabet, (0, 0), _NO_FLAGS) for p in patterns]
    gained: FSM = machines[0].intersection(machines[-2])
    if len(machines) > 3:
        gained = gained.difference(machines[1].union(*machines[2:-2]))
    if gained.empty():
        return None
    plain = gained.intersection(machines[-1])
    found = _first(plain) if not plain.empty() else None
    return found if found is not None else _first(gained)


def _first(machine: FSM) -> str | None:
    """The shortest string the automaton accepts (breadth first, each state once), or None."""
    by_transition = machine.alphabet.by_transition
    seen = {machine.initial: ""}
    queue = deque([machine.initial])
    while queue:
        state = queue.popleft()
        text = seen[state]
        if state in machine.finals:
            return text
        for transition, target in sorted(machine.map.get(state, {}).items()):
            if target not in seen:
                letters = sorted(
                    by_transition[transition], key=lambda s: (not isinstance(s, str), str(s))
                )
                seen[target] = text + _letter(letters[0])
                queue.append(target)
    return None


def _letter(letter: Any) -> str:
    return (
        letter if isinstance(letter, str) else "\u00a7"
    )  # anything else: a letter no pattern names


def _samples(pattern: str, kind: str) -> list[str]:
    """A few plain strings ``pattern`` matches (each wildcard filled one way or another),
    tried before any automaton is built: when one is outside the old patterns, it is the
    example."""
    if kind != "glob":
        return []
    found = []
    for deep, star in (("", "0"), ("0/", "0"), ("", "")):
        text = pattern.replace("**/", deep).replace("**", "0").replace("*", star).replace("?", "0")
        if text and re.fullmatch(glob_regex(pattern), text) and text not in found:
            found.append(text)
    return found


def matches_any(text: str, sources: Iterable[str]) -> bool:
    """Whether ``text`` is in the language of one of the regular expressions."""
    return any(re.fullmatch(s, text, re.S) for s in sources)
