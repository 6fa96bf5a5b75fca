"""Helpers for job tests: scripted model endpoints and sessions put into a role."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.models import Permission, User

from roles.models import EndpointKind, ModelEndpoint
from roles.services import role_write
from sessions_app.agent.loop import run_job
from sessions_app.models import AgentSession, Job
from sessions_app.services.changes import change_record, change_track
from sessions_app.services.jobs import job_create
from sessions_app.services.plans import plan_set
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition
from sessions_app.services.workspaces import workspace_writer


def scripted_model(
    role: str, steps: list[Any], *, name: str | None = None, fallback: bool = False
) -> ModelEndpoint:
    """Route ``role`` to a scripted endpoint replaying ``steps``."""
    endpoint = ModelEndpoint.objects.create(
        name=name or f"scripted-{role}",
        kind=EndpointKind.SCRIPTED,
        model="scripted-test",
        script=steps,
    )
    field = "fallback_model" if fallback else "preferred_model"
    role_write(data={field: endpoint.name}, create=False, slug=role, actor="test")
    return endpoint


def allow_attach(user: User) -> None:
    """Let ``user`` start sessions on existing directories (under ACODE_ATTACH_ROOTS)."""
    user.user_permissions.add(Permission.objects.get(codename="attach_workspace"))
    for cache in ("_perm_cache", "_user_perm_cache"):
        user.__dict__.pop(cache, None)


def session_in(
    role: str,
    owner: User,
    *,
    workspace: Path | None = None,
    plan: bool = True,
    change: bool = False,
    repository: str | None = None,
) -> AgentSession:
    """A session moved into ``role`` through the real transition rules (on an attached
    ``workspace``, a clone of ``repository``, or an empty managed workspace)."""
    if workspace is not None:
        allow_attach(owner)
    session = session_create(
        owner=owner,
        title="t",
        task="Add JWT authentication",
        workspace=str(workspace) if workspace else None,
        repository=repository,
    )
    if role == "default":
        return session
    if plan:
        plan_set(session=session, steps=["Create AuthService"], actor="test")
    if change:
        change_record(
            session=session,
            path="src/app.py",
            kind="modified",
            diff="--- a/src/app.py\n+++ b/src/app.py\n@@\n+x = 1\n",
            actor="test",
        )
    path = {
        "planner": ["planner"],
        "coder": ["planner", "coder"],
        "reviewer": ["planner", "coder", "reviewer"],
        "tester": ["tester"],
        "explorer": ["explorer"],
    }[role]
    for step in path:
        session_transition(session=session, to_role=step, reason="test", actor="test")
    session.refresh_from_db()
    return session


def run(session: AgentSession, request: str, owner: User) -> Job:
    job = job_create(session=session, request=request, user=owner)
    return run_job(job.pk)


def server_write(session: AgentSession, path: str, text: str | None, *, run_id: Any = None) -> None:
    """The server writes (or, with None, deletes) a workspace file and records it as a
    pending change: what a tool call does, without a model (``run_id``: as a run's job)."""
    writer = workspace_writer(session)
    written = writer.delete(path) if text is None else writer.write(path, data=text.encode())
    change_track(session=session, write=written, actor="test", run_id=run_id)
