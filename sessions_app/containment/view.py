"""The one view: what any process acode starts sees of a workspace.

Commands and MCP servers (and anything acode starts later) get their mounts, hidden files,
git view and environment from ``process_view`` and from nowhere else: ``bwrap_options``
refuses a view this function did not make, and a test fails if production code starts a
process any other way. What it decides:

- the workspace, read-only or as an overlay onto the process's copy-on-write layer;
- every file the workspace's secret index hides (for its name or links: an empty file; for
  its content: its redacted copy), unless the role may read secrets: the index keeps a tree
  of these stand-ins that is laid over the workspace as one more overlay layer (one mount,
  however many files are hidden); the same index ``read_file`` and search read, so what
  one door hides every door hides;
- git: a view repository holding no hidden content (``gitview``) at ``/run/acode-git``,
  never the real git directory; an attached workspace's own ``.git`` directory, and any
  ``.git`` directory below it (a nested repository), are masked with an empty one;
- the environment: a small base, what the caller adds (an MCP server's declared secrets),
  and git's variables.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sessions_app.containment.bwrap import GIT_VIEW, SandboxView, view_seal
from sessions_app.containment.gitview import GitSource, GitViewFailed, git_view
from sessions_app.containment.layer import Layer
from sessions_app.containment.safegit import GitRefused, checked_git_dir
from sessions_app.containment.secretfiles import SecretIndex
from sessions_app.containment.sessionlayer import session_layer_index

__all__ = [
    "BASE_ENV",
    "WorkspaceSight",
    "attached_git",
    "process_view",
    "workspace_sight",
]

logger = logging.getLogger(__name__)

BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "PYTHONDONTWRITEBYTECODE": "1",
}


@dataclass(frozen=True)
class WorkspaceSight:
    """What a role's processes may see of one workspace: the workspace, its secret index,
    the repository its git view is built from, and whether the role reads secrets."""

    workspace: Path
    index: SecretIndex
    git: GitSource | None = None
    read_secrets: bool = False
    masked_dirs: tuple[str, ...] = field(default=())


def workspace_sight(
    workspace: Path, index: SecretIndex, *, git_dir: Path | None, read_secrets: bool
) -> WorkspaceSight:
    """What a role's processes may see of ``workspace``: ``git_dir`` is the repository acode
    manages for it (server state); without one, the workspace's own ``.git`` if any."""
    if git_dir is not None:
        return WorkspaceSight(workspace, index, GitSource(git_dir, workspace), read_secrets)
    git, masked = attached_git(workspace)
    return WorkspaceSight(workspace, index, git, read_secrets, masked)


def attached_git(workspace: Path) -> tuple[GitSource | None, tuple[str, ...]]:
    """An attached workspace's own repository (its ``.git`` directory, if git may read it
    safely) and the ``.git`` directories to mask."""
    dotgit = Path(workspace) / ".git"
    if dotgit.is_symlink() or not dotgit.is_dir():
        return None, ()
    try:
        checked_git_dir(dotgit)
    except GitRefused:
        return None, (".git",)
    return GitSource(dotgit, Path(workspace)), (".git",)


def process_view(
    sight: WorkspaceSight | None,
    *,
    workspace: Path,
    layer: Layer | None = None,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    session_layer: Path | None = None,
) -> SandboxView:
    """The view of one process: ``sight`` says what of ``workspace`` it may see (None: a
    directory of its own with nothing to hide); ``layer`` takes its writes; ``env`` replaces
    the base environment's entries and ``extra_env`` adds to it; ``session_layer``: what the
    session keeps that the repository ignores, laid over the workspace."""
    full_env = dict(BASE_ENV)
    for name, value in {**(env or {}), **(extra_env or {})}.items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ValueError(f"invalid environment variable {name!r}")
        full_env[name] = value
    masks: Path | None = None
    session_masks: Path | None = None
    hidden = 0
    git_mount: Path | None = None
    raw_git: Path | None = None
    masked: tuple[str, ...] = ()
    if sight is not None and sight.read_secrets:
        # A role that reads secrets sees the repository itself (an attached one in place).
        if sight.git is not None and sight.git.git_dir.parent != sight.workspace:
            raw_git = sight.git.git_dir
    elif sight is not None:
        masks, hidden = sight.index.masks()
        if session_layer is not None and session_layer.is_dir():
            session_masks, kept_hidden = session_layer_index(session_layer).masks()
            hidden += kept_hidden
        git_mount = _git_view(sight)
        masked = (*sight.masked_dirs, *sight.index.nested_git_dirs())
    if git_mount is not None or raw_git is not None:
        full_env.update(GIT_DIR=GIT_VIEW, GIT_WORK_TREE=str(workspace))
    return SandboxView(
        layer=layer, masks=masks, hidden_count=hidden, git_view=git_mount, git_dir=raw_git, masked=masked,
        env=tuple(full_env.items()), seal=view_seal(), session_layer=session_layer,
        session_masks=session_masks,
    )  # fmt: skip


def _git_view(sight: WorkspaceSight) -> Path | None:
    if sight.git is None:
        return None
    try:
        return git_view(sight.git, sight.index)
    except GitViewFailed as exc:  # no git at all rather than the real one
        logger.warning("no git view for %s: %s", sight.workspace, exc)
        return None
