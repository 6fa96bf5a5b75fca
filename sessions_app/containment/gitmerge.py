"""Merging a branch of one server-side git directory into a branch of another, in-process
(libgit2 through pygit2, like every commit acode makes): no git program, no hooks, no
config of the repositories taking part.

The target is a bare repository in server state (a project's integration repository,
made on first use); the source's objects are fetched into it over libgit2's local
transport, then merged in memory: a fast-forward when the target has not moved past the
source's base, else a merge commit with both parents, or the conflicting paths and
nothing written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from sessions_app.containment.gitobjects import open_repository


@dataclass(frozen=True)
class MergeOutcome:
    """The branch's new commit, or the paths that conflicted (nothing written then)."""

    commit: str = ""
    conflicts: list[str] = field(default_factory=list)
    already: bool = False  # the source was in the branch already


def _target(git_dir: Path) -> pygit2.Repository:
    if not git_dir.is_dir():
        git_dir.parent.mkdir(parents=True, exist_ok=True)
        pygit2.init_repository(str(git_dir), bare=True)
    return open_repository(git_dir)


def merge_branch(
    target_dir: Path,
    branch: str,
    source_dir: Path,
    source_branch: str,
    *,
    message: str,
    who: tuple[str, str],
) -> MergeOutcome:
    """Merge ``source_branch`` of ``source_dir`` into ``branch`` of ``target_dir``."""
    repo = _target(target_dir)
    fetched = f"refs/acode/merging/{source_branch}"
    remote = repo.remotes.create_anonymous(str(source_dir))
    remote.fetch([f"+refs/heads/{source_branch}:{fetched}"])
    theirs = repo.references[fetched].resolve().target
    ref = f"refs/heads/{branch}"
    found = repo.references.get(ref)
    if found is None:  # the first merge starts the branch at the source
        repo.references.create(ref, theirs)
        return MergeOutcome(commit=str(theirs))
    ours = found.resolve().target
    base = repo.merge_base(ours, theirs)
    if base == theirs:
        return MergeOutcome(commit=str(ours), already=True)
    if base == ours:
        repo.references.create(ref, theirs, force=True)
        return MergeOutcome(commit=str(theirs))
    index = repo.merge_commits(ours, theirs)
    if index.conflicts is not None:
        paths = sorted(
            {entry.path for triple in index.conflicts for entry in triple if entry is not None}
        )
        return MergeOutcome(conflicts=paths)
    tree = index.write_tree(repo)
    signature = pygit2.Signature(*who)
    commit = repo.create_commit(None, signature, signature, message, tree, [ours, theirs])
    repo.references.create(ref, commit, force=True)
    return MergeOutcome(commit=str(commit))


def branch_head(git_dir: Path, branch: str) -> str:
    """The commit ``branch`` points at ("" when the repository or branch is missing)."""
    if not git_dir.is_dir():
        return ""
    found = open_repository(git_dir).references.get(f"refs/heads/{branch}")
    return str(found.resolve().target) if found is not None else ""


def branch_files(git_dir: Path, branch: str) -> list[str]:
    """The paths of the files on ``branch`` ([] when the repository or branch is missing)."""
    if not git_dir.is_dir():
        return []
    found = open_repository(git_dir).references.get(f"refs/heads/{branch}")
    if found is None:
        return []
    tree = found.peel(pygit2.Commit).tree
    paths: list[str] = []

    def walk(node: pygit2.Tree, prefix: str) -> None:
        for entry in node:
            if isinstance(entry, pygit2.Tree):
                walk(entry, f"{prefix}{entry.name}/")
            else:
                paths.append(f"{prefix}{entry.name}")

    walk(tree, "")
    return sorted(paths)
