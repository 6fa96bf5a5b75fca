"""Who may see and act on a backlog (the one place it is decided), and fetching with the check.

A project is seen and acted on like a session: its owner, and team leads
(``view_all_sessions`` sees every board, ``act_on_all_sessions`` acts on every one). A
project or task the user may not see is ACODE-BKL-003, whether or not it exists; one they
see but may not act on is ACODE-API-403.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from acode.errors import AcodeError
from sessions_app.models import BacklogProject, BacklogTask
from sessions_app.permissions import can_act_on_all, can_view_all
from sessions_app.selectors.backlog import tasks_of


def projects_visible_to(user: Any) -> QuerySet[BacklogProject]:
    qs = BacklogProject.objects.select_related("owner", "repository")
    return qs if can_view_all(user) else qs.filter(owner_id=user.pk)


def can_act_on_project(user: Any, project: BacklogProject) -> bool:
    return bool(project.owner_id == user.pk or can_act_on_all(user))


def project_for(user: Any, slug: str, *, act: bool = False) -> BacklogProject:
    """The project if the user may see it (and act on it when ``act``), or the refusal."""
    project = projects_visible_to(user).filter(slug=slug).first()
    if project is None:
        raise AcodeError("ACODE-BKL-003", f"No project {slug!r}.", {"project": slug})
    if act and not can_act_on_project(user, project):
        raise AcodeError(
            "ACODE-API-403", "Only the project's owner or a team lead acts on its board.", {}
        )
    return project


def task_for(user: Any, slug: str, key: str, *, act: bool = False) -> BacklogTask:
    project = project_for(user, slug, act=act)
    task = tasks_of(project).filter(key=key).first()
    if task is None:
        raise AcodeError("ACODE-BKL-003", f"No task {key!r} in {slug}.", {"task": key})
    return task
