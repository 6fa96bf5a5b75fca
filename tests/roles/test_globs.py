"""Write globs have one meaning: the library matcher (``roles.globs``, wcmatch configured)
and the regular expression the policy diff builds its automata from
(``roles.decision.diff_paths.glob_regex``) agree on every glob and workspace path. Legacy
command patterns likewise: ``fnmatch`` (the command check) and ``fnmatch_regex`` (the diff)
agree, or the diff declines the pattern (then it is conservative)."""

from __future__ import annotations

import fnmatch
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from roles.decision.diff_paths import fnmatch_regex, glob_regex
from roles.writes import path_allowed

# Pieces globs are made of: wildcards, separators, and characters that are special to some
# glob language (brackets, "!", backslashes, braces, extglob and negation marks).
GLOB_PIECES = ["**/", "**", "*", "?", "/", "a", "b", ".", "[", "]", "!", "\\", "{", "}", ",",
               "(", ")", "|", "@", "+", "~", "-", "ab", ".py"]  # fmt: skip
NAME_PIECES = ["a", "b", ".", "[", "]", "!", "\\", "{", "}", ",", "(", ")", "|", "@", "+",
               "~", "-", "*", "?", "py"]  # fmt: skip

globs = st.lists(st.sampled_from(GLOB_PIECES), min_size=1, max_size=8).map("".join)
# A workspace path: names joined by "/", none empty, "." or ".." (paths are normalised).
names = (
    st.lists(st.sampled_from(NAME_PIECES), min_size=1, max_size=4)
    .map("".join)
    .filter(lambda n: n not in (".", ".."))
)
paths = st.lists(names, min_size=1, max_size=4).map("/".join)


def _means(glob: str, path: str) -> bool:
    return re.fullmatch(glob_regex(glob), path, re.S) is not None


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(glob=globs, path=paths)
@example(glob="src/**.py", path="src/a/b.py")
@example(glob="a**/b", path="a/b")
@example(glob="x**//y", path="x/y")
@example(glob="src//a.py", path="src/a.py")
@example(glob="pages/[id].tsx", path="pages/[id].tsx")
def test_the_library_matches_what_the_diff_reads(glob: str, path: str) -> None:
    assert path_allowed(path, [glob]) is _means(glob, path), (glob, path)


@given(glob=globs, data=st.data())
@settings(max_examples=1000, deadline=None)
def test_a_path_built_from_a_glob_matches_it(glob: str, data: st.DataObject) -> None:
    """Paths a glob was made to match (its wildcards filled in), not just random ones."""
    fill = {"**/": data.draw(st.sampled_from(["", "a/", "a/b/"])),
            "**": data.draw(st.sampled_from(["", "a", "a/b"])),
            "*": data.draw(st.sampled_from(["", "a", ".b"])), "?": "a"}  # fmt: skip
    path = re.sub(r"\*\*/|\*\*|\*|\?", lambda m: fill[m.group()], glob)
    parts = path.split("/")
    if not path or any(p in ("", ".", "..") for p in parts):
        return  # not a workspace path
    assert path_allowed(path, [glob]) is _means(glob, path), (glob, path)


@pytest.mark.parametrize(
    ("glob", "path", "allowed"),
    [
        ("src/**.py", "src/a/b.py", True),  # ``**`` inside a name still crosses directories
        ("a**/b", "a/b", True),
        ("a**/b", "ax/y/b", True),
        ("src//a.py", "src/a.py", False),  # an empty name matches no workspace path
        ("{a,b}.md", "a.md", False),  # braces are literal
        ("!a.md", "!a.md", True),
        ("a\\*.md", "a\\x.md", True),  # a backslash is itself, the star a wildcard
    ],
)
def test_write_globs_keep_their_unusual_spellings(glob: str, path: str, allowed: bool) -> None:
    assert path_allowed(path, [glob]) is allowed


PATTERN_PIECES = ["*", "?", "[", "]", "!", "-", "a", "s", "z", "n", " ", ".", "_", "0", "9"]
patterns = st.lists(st.sampled_from(PATTERN_PIECES), min_size=1, max_size=9).map("".join)
commands = st.lists(st.sampled_from(["a", "b", "s", "t", "z", "-", " ", ".", "_", "0", "!", "n",
                                     "[", "]"]), max_size=7).map("".join)  # fmt: skip


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns, command=commands)
@example(pattern="cat [a-s]*", command="cat -n x")  # a range, not three characters
@example(pattern="[!a-s]", command="-")
@example(pattern="[-a]", command="-")
@example(pattern="[a-]", command="-")
@example(pattern="[.-z]", command="a")
def test_a_legacy_command_pattern_means_for_the_diff_what_it_means_for_the_check(
    pattern: str, command: str
) -> None:
    regex = fnmatch_regex(pattern)
    if regex is not None:
        read = re.fullmatch(regex, command, re.S) is not None
        assert read is fnmatch.fnmatchcase(command, pattern), (pattern, regex, command)
