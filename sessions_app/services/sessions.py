"""Writes to sessions: open one, change its details (archiving: ``services.archive``)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from acode.errors import AcodeError
from roles.registry import registry
from sessions_app.models import (
    AgentSession,
    AuditEventType,
    RiskTier,
    RoleTransition,
    SessionStatus,
)
from sessions_app.permissions import SessionAction, action_check
from sessions_app.services.audit import (
    actor_name,
    audit_record,
    publish_session_event,
    session_record,
)
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.locks import lock_session
from sessions_app.services.workspaces import repository_for, workspace_attach, workspace_create

logger = logging.getLogger(__name__)


def history_start(session: AgentSession, owner: User, request_id: str) -> None:
    """The first history entry (in Default), the session's audit chain and its first event."""
    actor = actor_name(owner)
    default = registry.by_id(session.current_role_id)
    RoleTransition.objects.create(
        session=session,
        seq=1,
        from_role=None,
        to_role_id=default.id,
        role_version_id=default.version_id,
        reason="Initial state",
        actor=actor,
        user_id=owner.pk,
        request_id=request_id,
        created_at=session.role_since,
    )
    audit_record(
        event_type=AuditEventType.SESSION_CREATED,
        actor=actor,
        session=session,
        role=default.slug,
        target=str(session.id),
        result="created",
        details={
            "title": session.title,
            "workspace": session.workspace,
            "repository": session.repository.name if session.repository else None,
            "branch": session.branch,
            "risk_tier": session.risk_tier,
        },
    )


def session_create(
    *,
    owner: User,
    title: str,
    task: str = "",
    repository: str | None = None,
    workspace: str | None = None,
    risk_tier: str = RiskTier.LOW,
    request_id: str = "",
) -> AgentSession:
    """Open a session in the Default role, in a workspace of its own under
    ACODE_WORKSPACES_ROOT: a clone of ``repository`` (one the owner may use) on the branch
    ``acode/<session>``, or an empty git repository. ``workspace`` attaches an existing
    directory instead, for owners allowed to (``workspace_attach``)."""
    session_id = uuid.uuid4()
    repo = repository_for(owner, repository) if repository else None
    attached = workspace_attach(owner, workspace) if workspace and not repo else None
    default = registry.default()
    now = timezone.now()
    with transaction.atomic():
        place = attached or workspace_create(session_id, repo)
        session = AgentSession.objects.create(
            id=session_id,
            title=title,
            task=task,
            owner=owner,
            workspace=str(place.path),
            workspace_managed=place.managed,
            repository=repo,
            branch=place.branch,
            base_commit=place.base_commit,
            current_role_id=default.id,
            role_version_id=default.version_id,
            role_since=now,
            transition_count=1,
            last_reason="Initial state",
            risk_tier=risk_tier,
        )
        history_start(session, owner, request_id)
        transaction.on_commit(lambda: publish_session_event(session.id, EventKind.SESSION_CREATED))
    return session


@transaction.atomic
def session_update(
    *,
    session: AgentSession,
    data: dict[str, Any],
    actor: str | None = None,
    user: User | None = None,
) -> AgentSession:
    """Change a session's title, task, risk tier or status (never its role); not while a
    run executes in it (``permissions.action_refusal``)."""
    allowed = {"title", "task", "risk_tier", "status"}
    if "current_role" in data or "role" in data:
        raise AcodeError(
            "ACODE-SES-003",
            "The role changes only through a transition (POST /api/sessions/{id}/transition/).",
            {"field": "current_role"},
        )
    if data.get("status") == SessionStatus.ARCHIVED:
        raise AcodeError(
            "ACODE-SES-009",
            "A session is archived only by archiving it (POST /api/sessions/{id}/archive/, "
            "`acode session archive`): that frees its files and makes it read-only.",
            {"field": "status"},
        )
    with lock_session(session.pk) as locked:
        action_check(SessionAction.SESSION_UPDATE, session=locked, user=user)
        changed = {}
        for key, value in data.items():
            if key in allowed and getattr(locked, key) != value:
                changed[key] = {"from": getattr(locked, key), "to": value}
                setattr(locked, key, value)
        if changed:
            locked.save()
            session_record(
                locked,
                EventKind.SESSION_UPDATED,
                event_type=AuditEventType.SESSION_UPDATED,
                actor=actor_name(user, actor),
                target=", ".join(changed),
                result="updated",
                details=changed,
            )
    return locked
