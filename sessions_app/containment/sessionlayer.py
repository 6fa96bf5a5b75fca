"""What a session keeps that is never reviewed: paths the repository ignores.

Caches, build output and a virtual environment made in the workspace (``.ruff_cache/``,
``build/``, ``.venv/``) are not work to review, but a command after them needs them. Each
session has a layer in server state (``ACODE_LAYERS_ROOT/sessions/<session>``) that every
command of the session sees above the workspace, under its own layer; what a command left
at a path git's ignore rules ignore is moved there (``session_keep``), never applied to the
workspace, never a pending change, never committed.

Ignored is decided by the server, as git does: the ``.gitignore`` files of the merged view
(the command's layer, then the session layer, then the workspace), a path tracked in the
repository's index is never ignored, and a directory holding a tracked file is not either.
"""

from __future__ import annotations

import bisect
import os
import stat as st
from collections.abc import Callable
from pathlib import Path

import pathspec

from sessions_app.containment.layer import remove_at
from sessions_app.containment.nofollow import open_dir, opened_path, read_head
from sessions_app.containment.safefs import DIR_FLAGS
from sessions_app.containment.secretfiles import SecretIndex

GITIGNORE_CAP = 1 << 20


class IgnoreRules:
    """git's ignore rules over ``roots`` (top layer first): ``rules(path, is_dir)`` says
    whether ``path`` is ignored, given that its parent directories are not. ``tracked``
    lists the repository's tracked paths, read only when a rule matches."""

    def __init__(self, roots: list[Path], tracked: Callable[[], list[str]]) -> None:
        self.roots = roots
        self._tracked_source = tracked
        self._tracked: list[str] | None = None
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {}

    def __call__(self, path: str, is_dir: bool) -> bool:
        if not self._matches(path, is_dir):
            return False
        return not self._is_tracked(path, is_dir)

    def _matches(self, path: str, is_dir: bool) -> bool:
        """The last matching pattern of the ``.gitignore`` files from the root down."""
        decision = None
        parts = path.split("/")
        for depth in range(len(parts)):
            base = "/".join(parts[:depth])
            spec = self._spec(base)
            if spec is None:
                continue
            rel = "/".join(parts[depth:]) + ("/" if is_dir else "")
            found = spec.check_file(rel).include
            if found is not None:
                decision = found
        return bool(decision)

    def _spec(self, directory: str) -> pathspec.GitIgnoreSpec | None:
        if directory not in self._specs:
            self._specs[directory] = self._read(directory)
        return self._specs[directory]

    def _read(self, directory: str) -> pathspec.GitIgnoreSpec | None:
        rel = f"{directory}/.gitignore" if directory else ".gitignore"
        for root in self.roots:
            try:
                with opened_path(root, rel) as fd:
                    if fd >= 0:
                        text = read_head(fd, GITIGNORE_CAP)[:GITIGNORE_CAP]
                        lines = text.decode("utf-8", "replace").splitlines()
                        return pathspec.GitIgnoreSpec.from_lines(lines)
            except OSError:
                continue
        return None

    def _is_tracked(self, path: str, is_dir: bool) -> bool:
        if self._tracked is None:
            self._tracked = sorted(self._tracked_source())
        paths = self._tracked
        at = bisect.bisect_left(paths, path)
        if at < len(paths) and paths[at] == path:
            return True
        if is_dir:
            at = bisect.bisect_left(paths, f"{path}/")
            return at < len(paths) and paths[at].startswith(f"{path}/")
        return False


def session_keep(
    upper: Path, session: Path, paths: list[str], scrub: list[str], prefix: str
) -> None:
    """Move what a command left at the ignored ``paths`` (top-most first) from its layer's
    ``upper`` directory into the session layer, after removing ``scrub`` (entries not
    kept). A directory the kernel did not make opaque merges into one the session layer
    has; anything else replaces what the session layer held there."""
    session.mkdir(parents=True, exist_ok=True, mode=0o755)
    for rel in scrub:
        _at(upper, rel, create=False, act=remove_at)
    for rel in paths:
        _merge(upper, session, rel, prefix)


def _at(root: Path, rel: str, *, create: bool, act: Callable[[int, str], None]) -> None:
    """``act(parent_fd, name)`` for ``rel`` under ``root``, each directory opened without
    following links (made when ``create``; a link or file on the way is replaced)."""
    *parents, name = rel.split("/")
    fd = os.open(root, DIR_FLAGS)
    try:
        for part in parents:
            child = open_dir(fd, part)
            if child < 0 and create:
                remove_at(fd, part)
                os.mkdir(part, 0o755, dir_fd=fd)
                child = open_dir(fd, part)
            os.close(fd)
            fd = child
            if fd < 0:
                return
        act(fd, name)
    finally:
        if fd >= 0:
            os.close(fd)


def _merge(upper: Path, session: Path, rel: str, prefix: str) -> None:
    """Move ``rel`` into the session layer, merging directories, without recursion."""
    todo = [rel]
    while todo:
        path = todo.pop()
        source = _open_parent(upper, path)
        if source < 0:
            continue
        name = path.rsplit("/", 1)[-1]
        try:
            info = os.stat(name, dir_fd=source, follow_symlinks=False)
            if st.S_ISDIR(info.st_mode) and not _opaque(source, name, prefix):
                children = _merge_into(session, path, source, name)
                todo.extend(f"{path}/{child}" for child in children)
                continue

            def move(target: int, _: str, source: int = source, name: str = name) -> None:
                remove_at(target, name)
                os.rename(name, name, src_dir_fd=source, dst_dir_fd=target)

            _at(session, path, create=True, act=move)
        finally:
            os.close(source)


def _merge_into(session: Path, path: str, source: int, name: str) -> list[str]:
    """A directory to merge: where the session layer has none, it moves whole (no
    children to visit); else its children are merged one by one."""
    children: list[str] = []

    def merge(target: int, _: str) -> None:
        there = open_dir(target, name)
        if there < 0:
            remove_at(target, name)
            os.rename(name, name, src_dir_fd=source, dst_dir_fd=target)
            return
        os.close(there)
        inner = open_dir(source, name)
        with os.scandir(inner) as entries:
            children.extend(e.name for e in entries)
        os.close(inner)

    _at(session, path, create=True, act=merge)
    return children


def _open_parent(root: Path, rel: str) -> int:
    """The directory holding ``rel`` under ``root`` (never through a link), or -1."""
    fd = os.open(root, DIR_FLAGS)
    for part in rel.split("/")[:-1]:
        child = open_dir(fd, part)
        os.close(fd)
        fd = child
        if fd < 0:
            return -1
    return fd


def _opaque(parent: int, name: str, prefix: str) -> bool:
    fd = open_dir(parent, name)
    if fd < 0:
        return False
    try:
        return os.getxattr(fd, prefix + "opaque") == b"y"
    except OSError:
        return False
    finally:
        os.close(fd)


def session_layer_index(layer: Path) -> SecretIndex:
    """The secret index of a session's layer: what a role that reads secrets kept there (a
    build's ``.env``, a generated key) is hidden from a role that does not, as in the
    workspace. Only the server moves files in (``session_keep``), so it is kept, not walked."""
    return SecretIndex(layer, layer.with_name(f"{layer.name}.index"), live=False, shared=False)


def session_layer_path(layers_root: Path, session_id: str) -> Path:
    """Where a session's layer lives (server state, beside the command layers: a move
    from a command's layer into it is a rename)."""
    return Path(layers_root) / "sessions" / session_id
