"""Which paths git can store: its own path rules, asked of libgit2, plus the HFS ones.

A pending change names a path the commit will hold. A name git refuses (``.git`` in any
case, and what Windows or macOS would read as ``.git``: ``.git ``, ``.git.``, ``GIT~1``,
``.git::$INDEX_ALLOCATION``, ``.g\u200cit``; ``.`` and ``..``; empty components) is
refused when it would become a pending change, never silently dropped by the commit.
"""

from __future__ import annotations

import re

import pygit2

# git's is_hfs_dotgit: code points HFS+ ignores when it compares names.
_HFS_IGNORED = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
_NO_BLOB = pygit2.Oid(hex="0" * 40)


def is_git_path(path: str) -> bool:
    """Whether ``path`` is in git metadata (a ``.git`` component, in any case)."""
    return any(part.lower() == ".git" for part in path.split("/"))


def git_path_problem(path: str) -> str:
    """Why git cannot store ``path`` as a file ("" when it can): libgit2's path validation
    (git's rules with the NTFS protections) and git's HFS rule for ``.git``."""
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return f"{path!r}: empty, '.' and '..' path components cannot be stored"
    if any(_HFS_IGNORED.sub("", part).lower() == ".git" for part in parts):
        return f"{path!r}: macOS reads a component of it as '.git'"
    try:
        pygit2.Index().add(pygit2.IndexEntry(path, _NO_BLOB, pygit2.enums.FileMode.BLOB))
    except (pygit2.GitError, ValueError):
        return f"{path!r}: git refuses this name (it would be read as '.git' on Windows or macOS)"
    return ""
