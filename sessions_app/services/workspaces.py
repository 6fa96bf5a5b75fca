"""Workspaces: every session works in a git checkout of its own under ACODE_WORKSPACES_ROOT,
empty or cloned from a registered repository, on the branch ``acode/<session>``. Approved
changes become commits on that branch; the branch is downloadable as a patch.

Git here always runs through ``sessions_app.agent.safegit``: a clean environment and no
hooks, fsmonitor, pagers, external diffs or drivers from the (agent-writable) repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings

from acode.errors import AcodeError
from sessions_app.agent.safegit import GitRefused, clone, git_env, run_git
from sessions_app.models import AgentSession, Repository
from sessions_app.permissions import can_attach_workspace, repository_can_use

COMMITTER = ("acode", "acode@localhost")
NO_REPOSITORY = (
    "No repository with that name is available to you. An administrator registers "
    "repositories and chooses who may use them."
)
NO_ATTACH = (
    "A session's workspace is created by acode (empty or a clone of a registered "
    "repository); attaching a server directory needs the attach_workspace permission and "
    "a directory under a root an administrator configured (ACODE_ATTACH_ROOTS)."
)


@dataclass(frozen=True)
class Workspace:
    path: Path
    managed: bool
    branch: str = ""
    base_commit: str = ""


def session_branch(session_id: uuid.UUID | str) -> str:
    return f"acode/{session_id}"


def repository_for(user: Any, name: str) -> Repository:
    """The named repository if the user may use it; one error whether or not it exists."""
    repository = Repository.objects.filter(name=name).first()
    if repository is None or not repository_can_use(user, repository):
        raise AcodeError("ACODE-SES-005", NO_REPOSITORY, {"repository": name})
    return repository


def workspace_attach(user: Any, raw: str) -> Workspace:
    """An existing server directory, for users allowed to attach one under an allowed root.

    The refusal is the same whether or not the path exists, so nobody learns which do.
    """
    path = Path(raw).expanduser()
    if not path.is_absolute() or not can_attach_workspace(user):
        raise AcodeError("ACODE-SES-002", NO_ATTACH, {"workspace": raw})
    real = path.resolve()
    roots = [Path(r).resolve() for r in settings.ACODE_ATTACH_ROOTS]
    if not real.is_dir() or not any(real == r or r in real.parents for r in roots):
        raise AcodeError("ACODE-SES-002", NO_ATTACH, {"workspace": raw})
    return Workspace(real, managed=False)


def _git(path: Path, *args: str) -> str:
    try:
        outcome = run_git(path, list(args))
    except GitRefused as exc:
        raise AcodeError("ACODE-SES-006", f"git refused the workspace: {exc}", {}) from exc
    if outcome.exit_code != 0:
        raise AcodeError(
            "ACODE-SES-006",
            f"git {args[0]} failed: {outcome.stderr.strip()[:500]}",
            {"command": args[0]},
        )
    return outcome.stdout.strip()


def _init(path: Path, branch: str) -> None:
    git = shutil.which("git", path="/usr/local/bin:/usr/bin:/bin") or "git"
    with tempfile.TemporaryDirectory(prefix="acode-git-home-") as home:
        subprocess.run(
            [git, "init", "--quiet", "--template=", "-b", branch, str(path)],
            env=git_env(home),
            check=True,
            capture_output=True,
            timeout=30,
        )


def workspace_create(session_id: uuid.UUID, repository: Repository | None = None) -> Workspace:
    """A new checkout for the session on its own branch: a clone of ``repository`` or empty."""
    root = Path(settings.ACODE_WORKSPACES_ROOT)
    root.mkdir(parents=True, exist_ok=True)
    path = root / str(session_id)
    branch = session_branch(session_id)
    if repository is None:
        _init(path, branch)
    else:
        extra = ["--branch", repository.default_branch] if repository.default_branch else []
        outcome = clone(repository.source, path, extra_args=extra)
        if outcome.exit_code != 0:
            shutil.rmtree(path, ignore_errors=True)
            raise AcodeError(
                "ACODE-SES-006",
                f"Could not clone repository {repository.name}: {outcome.stderr.strip()[:500]}",
                {"repository": repository.name},
            )
        _git(path, "checkout", "--quiet", "-b", branch)
    _git(path, "config", "user.name", COMMITTER[0])
    _git(path, "config", "user.email", COMMITTER[1])
    base = _git(path, "rev-parse", "--verify", "--quiet", "HEAD") if repository else ""
    return Workspace(path, managed=True, branch=branch, base_commit=base)


def _inside(relative: str) -> bool:
    pure = PurePosixPath(relative)
    return bool(relative) and not pure.is_absolute() and ".." not in pure.parts


def workspace_commit(session: AgentSession, paths: list[str], message: str) -> str:
    """Commit the approved paths on the session's branch; the new commit's id ('' if none)."""
    path = Path(session.workspace)
    if not session.workspace_managed or not session.branch:
        return ""
    # Literal pathspecs (no globbing). Changes recorded by hand (API) may name files that
    # are neither in the work tree nor tracked: those have nothing to commit.
    specs = [f":(literal){p}" for p in paths if _inside(p)]
    tracked = set(_git(path, "ls-files", "-z", "--", *specs).split("\0")) if specs else set()
    present = [
        f":(literal){p}"
        for p in paths
        if _inside(p) and (p in tracked or os.path.lexists(path / p))
    ]
    if not present:
        return ""
    # --force: an approved file is committed even if .gitignore names it.
    _git(path, "add", "--all", "--force", "--", *present)
    if not _git(path, "diff", "--cached", "--name-only"):
        return ""
    _git(path, "config", "user.name", COMMITTER[0])
    _git(path, "config", "user.email", COMMITTER[1])
    _git(path, "commit", "--quiet", "--no-verify", "-m", message)
    return _git(path, "rev-parse", "HEAD")


def workspace_patch(session: AgentSession) -> str:
    """The session branch's commits as a patch series (``git am`` applies it)."""
    if not session.workspace_managed or not session.branch:
        raise AcodeError(  # the session's state, not a git failure
            "ACODE-API-409", "Only workspaces acode created have a session branch.", {}
        )
    path = Path(session.workspace)
    if run_git(path, ["rev-parse", "--verify", "--quiet", "HEAD"]).exit_code != 0:
        return ""  # nothing committed yet
    span = [f"{session.base_commit}..HEAD"] if session.base_commit else ["--root", "HEAD"]
    return _git(path, "format-patch", "--stdout", *span) + "\n"
