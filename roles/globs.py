"""Write globs, matched by a kept library (``wcmatch``) configured to their meaning.

A write glob means: ``**/`` any directories (none too), ``**`` anything, ``*`` and ``?``
within one name, every other character itself ("pages/[id].tsx" names one file). The
other glob library on this machine (pathspec) has gitignore's meaning, which would widen
what roles may write: a pattern naming a directory matches all below it ("src" allows
src/x.py), one without a slash matches at any depth ("*.md" allows docs/a.md), and
brackets, "!" and backslashes are special.

wcmatch reads a glob so configured: its globstar, dot files matched, case kept, no braces,
extglobs or negation (flags it leaves off), brackets and backslashes escaped. Two spellings
differ: wcmatch takes ``**`` only as a whole name and sees "//" as one separator, so a
``**`` inside a name ("**.py", "a**/b") is handed over as each way it can match (within
the name, or across directories: "*.py" and "*/**/*.py"), and a "/" that follows another
keeps its own (it matches no workspace path, as before). ``roles.decision.diff_paths``
builds automata from the same language; a property test holds the two together.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

from wcmatch import glob as wcglob

_FLAGS = wcglob.GLOBSTAR | wcglob.DOTMATCH | wcglob.FORCEUNIX | wcglob.CASE
_TOKENS = re.compile(r"\*\*/|\*\*|\*|\?|.", re.S)
_LITERAL = re.compile(r"([\[\]\\])")
# Neighbours where one adds nothing: ``**`` then ``*``, ``**`` or ``**/`` is still
# anything, as is ``**/`` then ``**``; ``**/`` twice is any directories.
_REDUNDANT = {("**", "*"), ("**", "**"), ("**", "**/"), ("**/", "**"), ("**/", "**/")}


def glob_matches(glob: str, relative_path: str) -> bool:
    """Whether ``relative_path`` (POSIX, normalised, inside the workspace) matches ``glob``.

    The glob's literal head (before its first wildcard) must start the path: a cheap test
    that spares compiling the globs that cannot match (a role may have hundreds)."""
    return relative_path.startswith(_literal_head(glob)) and bool(
        _matcher(glob).match(relative_path)
    )


def _literal_head(glob: str) -> str:
    cut = min((i for i in (glob.find("*"), glob.find("?")) if i >= 0), default=len(glob))
    return glob[:cut]


@lru_cache(maxsize=4096)
def _matcher(glob: str) -> wcglob.WcMatcher[str]:
    return wcglob.compile(wcmatch_patterns(glob), flags=_FLAGS)


def wcmatch_patterns(glob: str) -> list[str]:
    """``glob`` as wcmatch patterns that together match what it means."""
    tokens: list[str] = []
    for token in _TOKENS.findall(glob):
        tokens.append(token)
        while len(tokens) > 1 and (tokens[-2], tokens[-1]) in _REDUNDANT:
            del tokens[-1 if tokens[-2] == "**" or tokens[-1] == "**/" else -2]
    choices: list[list[str]] = []
    for index, token in enumerate(tokens):
        whole_start = index == 0 or tokens[index - 1] in ("/", "**/")
        if token == "**/":
            choices.append(["**/"] if whole_start else ["", "*/**/"])
        elif token == "**":
            whole = whole_start and index + 1 == len(tokens)
            choices.append(["**"] if whole else ["*", "*/**/*"])
        else:
            choices.append([_LITERAL.sub(r"\\\1", token)])
    patterns = []
    for parts in itertools.product(*choices):
        text = ""
        for part in parts:  # a "/" after a "/" stays one (wcmatch would merge them)
            text += "\\/" if part == "/" and text.endswith("/") else part
        patterns.append(text)
    return patterns
