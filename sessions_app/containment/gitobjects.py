"""Git objects written in-process (libgit2, through pygit2): blobs, trees and commits.

The commit of approved changes is built here from the branch's tree plus exactly the
approved blobs, with no git program and none of the repository's programs or config
taking part (libgit2 reads no global or system config here, runs no hooks or filters and
never reads the work tree). Once built, its tree is compared with what was approved: a
path the approval names that the tree does not hold exactly (content and mode), or a path
the tree changed that the approval does not name, refuses the commit.

pygit2 rather than dulwich: libgit2 hashes and writes objects in C (a 5,000-file apply
hashes in milliseconds), its index builds a tree from a base tree plus changes in one call,
and it applies git's own path rules (``roles.gitpaths`` asks it too).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import ConfigLevel

IN_MEMORY_BLOB = 64 << 20  # larger files are streamed into the object store

# No global, XDG or system config (it could name programs, or change path rules); no
# ownership check (the git directories are the server's own).
_EMPTY_CONFIG_DIR = tempfile.mkdtemp(prefix="acode-no-git-config-")
for _level in (ConfigLevel.GLOBAL, ConfigLevel.XDG, ConfigLevel.SYSTEM, ConfigLevel.PROGRAMDATA):
    pygit2.settings.search_path[_level] = _EMPTY_CONFIG_DIR
pygit2.settings.owner_validation = False


class CommitMismatch(Exception):
    """The tree built from the approved changes does not hold exactly them."""


@dataclass(frozen=True)
class TreeChange:
    """One approved change: the blob id and git mode to put at ``path`` ("" and 0: remove)."""

    path: str
    content: str
    mode: int


def open_repository(git_dir: Path) -> pygit2.Repository:
    """The repository at ``git_dir`` (a git directory, never searched for)."""
    flags = pygit2.enums.RepositoryOpenFlag.NO_SEARCH | pygit2.enums.RepositoryOpenFlag.BARE
    return pygit2.Repository(str(git_dir), flags)


def blob_from_fd(repo: pygit2.Repository, fd: int) -> str:
    """Store the opened file's whole content as a blob; its id."""
    os.lseek(fd, 0, os.SEEK_SET)
    if os.fstat(fd).st_size <= IN_MEMORY_BLOB:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return str(repo.create_blob(b"".join(chunks)))
    with os.fdopen(os.dup(fd), "rb") as stream:
        return str(repo.create_blob_fromiobase(stream))


def commit_changes(
    git_dir: Path,
    ref: str,
    changes: Sequence[TreeChange],
    message: str,
    who: tuple[str, str],
) -> str:
    """Commit exactly ``changes`` on top of ``ref`` and move ``ref`` to it; the commit's id
    ("" when the tree would not change). ``CommitMismatch`` when the built tree is not the
    base plus exactly the changes (nothing is written to ``ref`` then)."""
    repo = open_repository(git_dir)
    found = repo.references.get(ref)
    parent = repo[found.resolve().target].peel(pygit2.Commit) if found is not None else None
    index = pygit2.Index()
    if parent is not None:
        index.read_tree(parent.tree)
    for change in sorted(changes, key=lambda c: (bool(c.content), c.path)):  # removals first
        if not change.content:
            if change.path in index:
                index.remove(change.path)
            continue
        mode = pygit2.enums.FileMode(change.mode)
        index.add(pygit2.IndexEntry(change.path, pygit2.Oid(hex=change.content), mode))
    tree = repo[index.write_tree(repo)].peel(pygit2.Tree)
    _verify(parent.tree if parent is not None else None, tree, changes)
    if parent is not None and tree.id == parent.tree_id:
        return ""
    signature = pygit2.Signature(*who)
    parents = [parent.id] if parent is not None else []
    commit = repo.create_commit(None, signature, signature, message, tree.id, parents)
    repo.references.create(ref, commit, force=parent is not None)
    return str(commit)


def _verify(base: pygit2.Tree | None, tree: pygit2.Tree, changes: Sequence[TreeChange]) -> None:
    """``tree`` holds each change exactly, and differs from ``base`` only where they say."""
    named = {c.path for c in changes}
    for change in changes:
        try:
            entry = tree[change.path]
        except KeyError:
            entry = None
        if entry is not None and entry.type_str != "blob":  # a directory: no file there
            entry = None
        if change.content:
            held = entry is not None and (str(entry.id), int(entry.filemode)) == (
                change.content,
                change.mode,
            )
        else:
            held = entry is None
        if not held:
            raise CommitMismatch(f"{change.path!r} is not in the commit as approved")
    # Against nothing, a tree's diff lists all its files (as deleted: swapped sides).
    diff = base.diff_to_tree(tree) if base is not None else tree.diff_to_tree()
    touched = {d.new_file.path for d in diff.deltas} | {d.old_file.path for d in diff.deltas}
    unnamed = sorted(touched - named)
    if unnamed:
        raise CommitMismatch(f"the commit also changes {', '.join(map(repr, unnamed[:5]))}")


def tracked_paths(git_dir: Path | None) -> list[str]:
    """The paths the repository's index tracks ([] without a repository or an index)."""
    if git_dir is None:
        return []
    try:
        return [entry.path for entry in open_repository(git_dir).index]
    except (pygit2.GitError, OSError, ValueError):
        return []
