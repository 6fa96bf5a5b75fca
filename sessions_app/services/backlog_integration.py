"""Integration: an approved task's work merged into its project's integration branch.

The branch lives in a bare repository in server state (``integration_git_dir``), made on
the first merge; each task's session branch is fetched into it and merged in-process
(``containment.merge_branch``, libgit2). A conflict merges nothing: the task goes back to
in progress with the conflicting paths shown, and a person sends it to the backlog again
(``task_unblock``) for a new run. A done task's session is archived: its checkout,
layer and indexes are freed, its branch and history kept (``services.archive``).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from django.conf import settings

from acode.errors import AcodeError
from sessions_app.containment import branch_head, merge_branch
from sessions_app.models import BacklogProject, BacklogTask, TaskStatus
from sessions_app.services.archive import session_archive
from sessions_app.services.backlog import task_move
from sessions_app.services.workspaces import COMMITTER, branch_push, session_git_dir

SCHEDULER = "scheduler"


def integration_git_dir(project: BacklogProject) -> Path:
    """Where a project's integration repository lives (server state; by id too, so a
    project made again under a deleted one's name starts afresh)."""
    return Path(settings.ACODE_GIT_ROOT) / "integration" / f"{project.pk}-{project.slug}.git"


def integration_head(project: BacklogProject) -> str:
    """The commit the project's integration branch points at ("" before the first merge)."""
    return branch_head(integration_git_dir(project), project.integration_branch)


def task_integrate(task: BacklogTask) -> BacklogTask:
    """Merge the task's session branch into the integration branch: done, or back to in
    progress with the conflict. A task whose run committed nothing is done with nothing
    merged."""
    session = task.session
    git_dir = session_git_dir(session) if session is not None else None
    if session is None or git_dir is None or not branch_head(git_dir, session.branch):
        return _done(task)
    project = task.project
    outcome = merge_branch(
        integration_git_dir(project),
        project.integration_branch,
        git_dir,
        session.branch,
        message=f"Merge task {task.key}: {task.title}\n\nRun {task.run_id}.",
        who=COMMITTER,
    )
    if outcome.conflicts:
        listed = ", ".join(outcome.conflicts[:20])
        return task_move(
            task=task,
            to=TaskStatus.IN_PROGRESS,
            actor=SCHEDULER,
            reason=f"Merging into {project.integration_branch} conflicted in: {listed}. "
            "Send it to the backlog again for a new run.",
            conflict=outcome.conflicts,
        )
    done = _done(task, merged_commit=outcome.commit)
    integration_push(project)
    return done


def _done(task: BacklogTask, **fields: Any) -> BacklogTask:
    """The task is done; its session, whose work is merged (its branch kept), is archived
    to free its files (a session still busy is left for a person to archive)."""
    done = task_move(task=task, to=TaskStatus.DONE, actor=SCHEDULER, reason="", **fields)
    if done.session is not None:
        with contextlib.suppress(AcodeError):
            session_archive(session=done.session, actor=SCHEDULER)
    return done


def integration_push(project: BacklogProject) -> None:
    """Push the integration branch to the project's repository's remote, like a session
    branch (only a repository marked pushable); the outcome is kept on the project. A
    failed push changes nothing merged: the next merge pushes again."""
    repository = project.repository
    if repository is None or not repository.pushable:
        return
    outcome = branch_push(integration_git_dir(project), project.integration_branch,
                          repository.source)  # fmt: skip
    said = "pushed to" if outcome.ok else "push failed to"
    BacklogProject.objects.filter(pk=project.pk).update(
        integration_pushed=f"{said} {outcome.remote}: {outcome.message}"[:4000]
    )
