"""The git a process acode starts may see: a view repository with no secret in it.

Commands (and MCP servers) see git through a repository built for them, never the real git
directory: one commit, the current HEAD's tree as the role sees the work tree (a file hidden
for its name is empty, one hidden for its content is its redacted copy: exactly what the
sandbox shows at that path), an index of that tree, and a minimal config. So ``git
status`` and ``git diff`` show only real changes, and no object holds a hidden file's
content: not the history (``git log`` shows that one commit), not a committed ``.env``,
not a loose object ``git cat-file --batch-all-objects`` could print.

Built in-process with pygit2 (libgit2): the kept blobs are copied as one pack, the trees
and the commit written into the view. A view is keyed by what it depends on (HEAD, the
repository's index, the rules) and reused until one moves; building one costs about a
pass over the tree, once per commit.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from sessions_app.containment.safegit import run_git
from sessions_app.containment.secretfiles import LINKS, SCAN_CAP, SecretIndex
from sessions_app.containment.secretscan import secret_by_name

VIEW_VERSION = "2"
KEEP_VIEWS = 3
FILE_MODES = (pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE)
VIEW_CONFIG = (
    "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
    # Inside the sandbox files belong to another uid and sit on another device: compare
    # only what the view can know (size and mtime), so `git status` does not re-read all.
    "\tcheckStat = minimal\n\ttrustctime = false\n\tfilemode = true\n"
)


class GitViewFailed(RuntimeError):
    """The view could not be built; commands then run without git."""


@dataclass(frozen=True)
class GitSource:
    """The repository a view is built from, and the work tree it belongs to."""

    git_dir: Path
    work_tree: Path


def git_view(source: GitSource, index: SecretIndex) -> Path:
    """The view repository of ``source`` as ``index`` hides files (built or reused)."""
    root = index.home / "git-view"
    key = _view_key(source, index)
    view = root / key
    if (view / "HEAD").is_file():
        os.utime(view)  # recently used: not pruned
        return view
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".build-{key}-{os.getpid()}-{time.monotonic_ns()}"
    try:
        _build(source, index, tmp)
        try:
            os.rename(tmp, view)
        except OSError:  # another process built it meanwhile: the same content
            if not (view / "HEAD").is_file():
                raise
    except (pygit2.GitError, OSError, KeyError, ValueError) as exc:
        raise GitViewFailed(f"the git view could not be built: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _prune(root, keep=view)
    return view


def linked_paths(index: SecretIndex) -> frozenset[str]:
    """Work-tree files the index hides for their links (as the view just brought it up to
    date)."""
    return frozenset(h.path for h in index.hidden(refresh=False) if h.why == LINKS)


def _view_key(source: GitSource, index: SecretIndex) -> str:
    linked = "\0".join(sorted(linked_paths(index)))
    parts = [VIEW_VERSION, index.rules.version, hashlib.sha256(linked.encode()).hexdigest()]
    for name in ("HEAD", "index", "packed-refs"):
        path = source.git_dir / name
        try:
            info = os.stat(path)
            parts.append(f"{name}:{info.st_size}:{info.st_mtime_ns}:{info.st_ino}")
        except OSError:
            parts.append(f"{name}:-")
    try:
        repo = pygit2.Repository(str(source.git_dir), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
        parts.append(str(repo.head.target) if not repo.head_is_unborn else "unborn")
    except pygit2.GitError:
        parts.append("unreadable")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:24]


def _build(source: GitSource, index: SecretIndex, target: Path) -> None:
    real = pygit2.Repository(str(source.git_dir), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    if "extensions.objectformat" in real.config:
        raise ValueError("only SHA-1 repositories have a git view")
    view = pygit2.init_repository(str(target), bare=True)
    head = real.lookup_reference("HEAD")
    branch = head.target if isinstance(head.target, str) else "refs/heads/main"
    tree: pygit2.Tree | None = None
    if not real.head_is_unborn:
        commit = real.head.peel(pygit2.Commit)
        builder = _TreeCopy(real, view, index)
        with index.batch():
            entries = builder.copy(commit.tree, "")
        pack = pygit2.PackBuilder(real)
        for oid in builder.kept:
            pack.add(oid)
        pack.write(str(target / "objects" / "pack"))
        tree_oid = builder.write_trees(entries)
        who = pygit2.Signature("acode", "acode@localhost", int(commit.commit_time), 0)
        message = (
            f"acode: the workspace at {str(commit.id)[:12]}, as your role sees it\n\n"
            "History and the content of hidden files are not part of this view.\n"
        )
        view.create_reference(branch, view.create_commit(None, who, who, message, tree_oid, []))
        tree = view[tree_oid].peel(pygit2.Tree)
    view.set_head(branch)
    (target / "description").unlink(missing_ok=True)
    shutil.rmtree(target / "hooks", ignore_errors=True)
    shutil.rmtree(target / "info", ignore_errors=True)
    (target / "config").write_text(VIEW_CONFIG, encoding="utf-8")
    if tree is not None:
        view_index = pygit2.Index(str(target / "index"))
        view_index.read_tree(tree)
        view_index.write()
        # Record the work tree's stat data where it matches (server side, reading the real
        # files): hidden files never match their view blob, so inside the sandbox git
        # compares exactly those by content.
        run_git(target, ["update-index", "-q", "--refresh"], work_tree=source.work_tree)


_Entry = tuple[str, "pygit2.Oid | list[Any]", int]  # name, blob id or entries, mode


class _TreeCopy:
    """The view's copy of a tree: hidden files replaced, kept blobs listed for the pack."""

    def __init__(self, real: pygit2.Repository, view: pygit2.Repository, index: SecretIndex):
        self.real, self.view, self.index = real, view, index
        self.kept: list[pygit2.Oid] = []
        self._empty: pygit2.Oid | None = None
        # Work-tree files hidden for their links (a hard link's other name may be outside):
        # what was committed at that path may be the outside file's content too.
        self.linked = linked_paths(index)

    def copy(self, tree: pygit2.Tree, prefix: str) -> list[_Entry]:
        """The tree's entries as (name, oid or subtree entries, mode), decided."""
        out: list[_Entry] = []
        for entry in tree:
            name = entry.name or ""
            path = f"{prefix}{name}"
            mode = entry.filemode
            if mode == pygit2.enums.FileMode.TREE:
                out.append(
                    (name, self.copy(self.real[entry.id].peel(pygit2.Tree), f"{path}/"), mode)
                )
            elif mode == pygit2.enums.FileMode.COMMIT:  # a submodule: no object to copy
                out.append((name, entry.id, mode))
            elif mode in FILE_MODES:
                out.append((name, self._file(path, entry.id), mode))
            else:  # a link: its target text
                self.kept.append(entry.id)
                out.append((name, entry.id, mode))
        return out

    def _file(self, path: str, oid: pygit2.Oid) -> pygit2.Oid:
        if secret_by_name(path, self.index.rules) or path in self.linked:
            return self._empty_blob()
        blob = self.real[oid].peel(pygit2.Blob)
        if blob.size > SCAN_CAP:
            return self._empty_blob()
        secret = self.index.verdict(str(oid), path)
        if secret is None:
            secret = self.index.content_verdict(path, blob.data)
        if not secret:
            self.kept.append(oid)
            return oid
        shown = self.index.shown(str(oid), path)
        return self.view.odb.write(pygit2.enums.ObjectType.BLOB, shown)

    def _empty_blob(self) -> pygit2.Oid:
        if self._empty is None:
            self._empty = self.view.odb.write(pygit2.enums.ObjectType.BLOB, b"")
        return self._empty

    def write_trees(self, entries: list[_Entry]) -> pygit2.Oid:
        builder = self.view.TreeBuilder()
        for name, value, mode in entries:
            oid = self.write_trees(value) if isinstance(value, list) else value
            builder.insert(name, oid, mode)
        return builder.write()


def _prune(root: Path, *, keep: Path) -> None:
    """Views no longer current, but the newest few (a running command may read one)."""
    views = sorted(
        (p for p in root.iterdir() if not p.name.startswith(".") and p != keep),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in views[KEEP_VIEWS - 1 :]:
        shutil.rmtree(old, ignore_errors=True)
