"""Workspaces: every session works in a checkout of its own under ACODE_WORKSPACES_ROOT,
empty or cloned from a registered repository, on the branch ``acode/<session>``. Its git
directory lives in server state (``ACODE_GIT_ROOT/<session>.git``), outside every mount a
command sees; only the server writes it. Approved changes become commits built from the
content recorded with each pending change (never from the work tree); the branch (or one
of its commits) is downloadable as a patch, and can be pushed to the repository's remote.

Git here always runs through ``sessions_app.containment.safegit``: a clean environment and no
hooks, fsmonitor, pagers, external diffs or drivers.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings

from acode.errors import AcodeError
from sessions_app.containment import (
    GIT_VIEW_CONFIG,
    URL_MASK,
    CommitMismatch,
    ContentStore,
    GitRefused,
    TreeChange,
    WorkspaceWriter,
    clone,
    commit_changes,
    init_repository,
    push,
    redact_userinfo,
    run_git,
)
from sessions_app.models import AgentSession, Repository
from sessions_app.permissions import can_attach_workspace, repository_can_use
from sessions_app.services.search_index import search_index_queue
from sessions_app.services.secrets import session_index, workspace_index

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
    search_index_queue(real)  # once the session is committed: it may have changed since
    return Workspace(real, managed=False)


def git_dir_of(session_id: uuid.UUID | str) -> Path:
    """Where a managed workspace's git directory lives (server state)."""
    return Path(settings.ACODE_GIT_ROOT) / f"{session_id}.git"


def git_checked(git_dir: Path, *args: str, work_tree: Path | None = None) -> str:
    """git on a session's git directory, its output; refused or failed: ACODE-SES-006."""
    try:
        outcome = run_git(git_dir, list(args), work_tree=work_tree)
    except GitRefused as exc:
        raise AcodeError("ACODE-SES-006", f"git refused the workspace: {exc}", {}) from exc
    if outcome.exit_code != 0:
        raise AcodeError(
            "ACODE-SES-006",
            f"git {args[0]} failed: {outcome.stderr.strip()[:500]}",
            {"command": args[0]},
        )
    return outcome.stdout.strip()


def workspace_prepare(git_dir: Path, work_tree: Path) -> None:
    """What acode keeps beside a git directory: the minimal config commands see through
    the sandbox's read-only git view, and the index of the work tree's secret files."""
    version = run_git(git_dir, ["config", "--get", "core.repositoryformatversion"])
    fmt = run_git(git_dir, ["config", "--get", "extensions.objectformat"])
    lines = ["[core]", f"\trepositoryformatversion = {version.stdout.strip() or '0'}",
             "\tbare = false"]  # fmt: skip
    if fmt.exit_code == 0 and fmt.stdout.strip():
        lines += ["[extensions]", f"\tobjectformat = {fmt.stdout.strip()}"]
    (git_dir / GIT_VIEW_CONFIG).write_text("\n".join(lines) + "\n", encoding="utf-8")
    workspace_index(work_tree, live=False).rebuild()


def workspace_create(session_id: uuid.UUID, repository: Repository | None = None) -> Workspace:
    """A new checkout for the session on its own branch: a clone of ``repository`` or empty."""
    root = Path(settings.ACODE_WORKSPACES_ROOT)
    root.mkdir(parents=True, exist_ok=True)
    path = root / str(session_id)
    git_dir = git_dir_of(session_id)
    branch = session_branch(session_id)
    try:
        path.mkdir()
        if repository is None:
            init_repository(git_dir, branch)
        else:
            extra = ["--branch", repository.default_branch] if repository.default_branch else []
            outcome = clone(repository.source, git_dir, extra_args=extra)
            if outcome.exit_code != 0:
                raise AcodeError(
                    "ACODE-SES-006",
                    f"Could not clone repository {repository.name}: "
                    f"{_masked(outcome.stderr.strip(), repository.source)[:500]}",
                    {"repository": repository.name},
                )
            git_checked(git_dir, "config", "core.bare", "false")
            git_checked(git_dir, "checkout", "--quiet", "-b", branch, work_tree=path)
        workspace_prepare(git_dir, path)
    except (AcodeError, GitRefused, OSError) as exc:
        shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(git_dir, ignore_errors=True)
        if isinstance(exc, AcodeError):
            raise
        raise AcodeError("ACODE-SES-006", f"Could not create the workspace: {exc}", {}) from exc
    base = git_checked(git_dir, "rev-parse", "--verify", "--quiet", "HEAD") if repository else ""
    search_index_queue(path)
    return Workspace(path, managed=True, branch=branch, base_commit=base)


def session_git_dir(session: AgentSession) -> Path | None:
    """The session's git directory in server state; None for an attached workspace.

    A workspace made before git directories moved out keeps its ``.git`` inside: it is
    moved to server state on first use (only a real directory; a link or file is refused)."""
    if not session.workspace_managed:
        return None
    git_dir = git_dir_of(session.pk)
    if git_dir.is_dir():
        return git_dir
    legacy = Path(session.workspace) / ".git"
    if legacy.is_symlink() or not legacy.is_dir():
        return None
    git_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(legacy, git_dir)
    except OSError:
        if not git_dir.is_dir():  # another process moved it meanwhile: fine
            shutil.move(str(legacy), str(git_dir))
    workspace_prepare(git_dir, Path(session.workspace))
    return git_dir


def attached_git_dir(session: AgentSession) -> Path | None:
    """An attached workspace's own ``.git`` directory (a real one), for its ignore rules'
    tracked paths; None for a managed workspace or none there."""
    found = Path(session.workspace) / ".git"
    if session.workspace_managed or found.is_symlink() or not found.is_dir():
        return None
    return found


def workspace_writer(session: AgentSession) -> WorkspaceWriter:
    """The one way the server changes the session's workspace (content stored in its git;
    every write scanned into the workspace's secret index)."""
    root = Path(session.workspace)
    git_dir = session_git_dir(session)
    return WorkspaceWriter(root, ContentStore(git_dir), session_index(session))


@dataclass(frozen=True)
class ApprovedChange:
    """A pending change as approved: the exact content (blob id) and mode to commit."""

    path: str
    content: str  # "" for a deletion
    mode: int  # git mode; 0 for a deletion


def workspace_commit(session: AgentSession, changes: Sequence[ApprovedChange], message: str) -> str:
    """Commit exactly ``changes`` on top of the session branch; the new commit's id ('' when
    there is nothing to commit or no branch).

    The tree is the branch's tree with each change's recorded blob put in (or its path
    removed), built in-process (``containment.gitobjects``): no git program, and the work
    tree, the repository's index, hooks and config play no part. A tree that does not hold
    exactly the approved content is refused (ACODE-CHG-003) and nothing is committed.
    """
    git_dir = session_git_dir(session)
    if git_dir is None or not session.branch or not changes:
        return ""
    wanted = [TreeChange(c.path, c.content, c.mode) for c in changes]
    try:
        commit = commit_changes(git_dir, f"refs/heads/{session.branch}", wanted, message, COMMITTER)
    except CommitMismatch as exc:
        raise AcodeError(
            "ACODE-CHG-003",
            f"The commit was not made: {exc}. The changes stay pending.",
            {"problem": str(exc)[:1000]},
        ) from exc
    if commit:
        # The repository's own index follows the branch, so `git status` in a command's
        # view shows only what is still pending.
        git_checked(git_dir, "reset", "--quiet", "--mixed", work_tree=Path(session.workspace))
    return commit


def workspace_patch(session: AgentSession) -> str:
    """The session branch's commits as a patch series (``git am`` applies it)."""
    git_dir = session_git_dir(session)
    if git_dir is None or not session.branch:
        raise AcodeError(  # the session's state, not a git failure
            "ACODE-API-409", "Only workspaces acode created have a session branch.", {}
        )
    ref = f"refs/heads/{session.branch}"
    if run_git(git_dir, ["rev-parse", "--verify", "--quiet", ref]).exit_code != 0:
        return ""  # nothing committed yet
    span = [f"{session.base_commit}..{ref}"] if session.base_commit else ["--root", ref]
    return git_checked(git_dir, "format-patch", "--stdout", *span) + "\n"


def workspace_commit_patch(session: AgentSession, sha: str) -> str:
    """One commit of the session branch as a patch; ``sha`` must be one the session
    delivered (the caller checks), so no revision syntax a user typed reaches git."""
    git_dir = session_git_dir(session)
    if git_dir is None or not session.branch:
        raise AcodeError(
            "ACODE-API-409", "Only workspaces acode created have a session branch.", {}
        )
    return git_checked(git_dir, "format-patch", "--stdout", "-1", sha) + "\n"


@dataclass(frozen=True)
class PushOutcome:
    """How a push went, as people may see it: remote and git's words, credentials masked."""

    ok: bool
    remote: str
    message: str


def masked_remote(url: str) -> str:
    """A remote as shown anywhere (pages, API, audit, logs): its user part masked."""
    return redact_userinfo(url)


MIN_MASKED_CHARS = 4  # shorter values would mask ordinary words of git's output


def _masked(text: str, remote: str) -> str:
    """Git's output with the remote's credentials masked, even where it echoed them bare."""
    text = text.replace(remote, masked_remote(remote))
    userinfo = urlsplit(remote).netloc.rpartition("@")[0] if "://" in remote else ""
    # The whole user part, and the password (or the token standing alone as the user).
    secret = userinfo.partition(":")[2] or userinfo
    for value in sorted({userinfo, secret, unquote(userinfo), unquote(secret)}, key=len)[::-1]:
        if len(value) >= MIN_MASKED_CHARS:
            text = text.replace(value, URL_MASK)
    return redact_userinfo(text)


def workspace_push(session: AgentSession, remote: str) -> PushOutcome:
    """Push the session branch to ``remote`` as the same branch (``acode/<session>``).

    A refusal or failure is returned, not raised: the commit stands whatever the remote
    says, and the caller records the outcome."""
    git_dir = session_git_dir(session)
    if git_dir is None or not session.branch:
        return PushOutcome(
            False, masked_remote(remote), "Only workspaces acode created have a session branch."
        )
    return branch_push(git_dir, session.branch, remote)


def branch_push(git_dir: Path, branch: str, remote: str) -> PushOutcome:
    """Push ``branch`` of a server-side git directory to ``remote`` as the same branch (a
    session's branch, a backlog's integration branch); the outcome, credentials masked."""
    shown = masked_remote(remote)
    ref = f"refs/heads/{branch}"
    try:
        outcome = push(git_dir, remote, f"{ref}:{ref}")
    except (GitRefused, ValueError) as exc:
        return PushOutcome(False, shown, _masked(str(exc), remote)[:2000])
    said = _masked(outcome.output.strip(), remote)[-2000:]
    if outcome.timed_out:
        return PushOutcome(
            False, shown, f"git push timed out after {outcome.duration:.0f}s. {said}"
        )
    if outcome.exit_code != 0:
        return PushOutcome(False, shown, said or f"git push exited with {outcome.exit_code}.")
    return PushOutcome(True, shown, said)
