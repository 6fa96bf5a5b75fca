"""Who may see and do what with sessions, jobs and the audit log: the one place it is decided.

The API, the dashboard pages, the websocket consumers and admin all ask here.

| who | sees | acts on (transitions, plans, changes, jobs) | verifies the audit chain |
| --- | --- | --- | --- |
| a session's owner | their own sessions, their jobs and audit rows | their own sessions | no |
| ``view_all_sessions`` | every session and every audit row | their own | no |
| ``act_on_all_sessions`` | every session (acting implies seeing) | every session | no |
| ``view_auditevent`` | every audit row | their own | yes |
| superuser | everything | everything | yes |

Repositories: a user may start sessions on a repository that lists them or one of their
groups (superusers: every one). Attaching an existing server directory instead needs
``attach_workspace`` and a directory under ``ACODE_ATTACH_ROOTS``.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from sessions_app.models import AgentSession, AuditEvent, Job, Repository


def can_act_on_all(user: Any) -> bool:
    """May change roles, plans and changes of any session (team lead)."""
    return bool(user.is_superuser or user.has_perm("sessions_app.act_on_all_sessions"))


def can_view_all(user: Any) -> bool:
    """May see every session; acting on all sessions implies seeing them."""
    return bool(user.has_perm("sessions_app.view_all_sessions") or can_act_on_all(user))


def session_can_view(user: Any, session: AgentSession) -> bool:
    # Owners need no permission lookup to see their own session.
    return bool(user.is_authenticated) and (session.owner_id == user.pk or can_view_all(user))


def session_can_act(user: Any, session: AgentSession) -> bool:
    return bool(user.is_authenticated) and (session.owner_id == user.pk or can_act_on_all(user))


def sessions_visible_to(user: Any) -> QuerySet[AgentSession]:
    qs = AgentSession.objects.select_related("current_role", "owner")
    return qs if can_view_all(user) else qs.filter(owner_id=user.pk)


def jobs_visible_to(user: Any) -> QuerySet[Job]:
    qs = Job.objects.select_related("session", "role", "role_version")
    return qs if can_view_all(user) else qs.filter(session__owner_id=user.pk)


def can_view_all_audit(user: Any) -> bool:
    return bool(can_view_all(user) or user.has_perm("sessions_app.view_auditevent"))


def audit_visible_to(user: Any) -> QuerySet[AuditEvent]:
    """Audit rows the user may read: all of them, or those of their own sessions."""
    if can_view_all_audit(user):
        return AuditEvent.objects.all()
    return AuditEvent.objects.filter(session__owner_id=user.pk)


def can_verify_audit(user: Any) -> bool:
    """May re-hash the whole audit log (it reads every row, so it is not for everyone)."""
    return bool(user.is_superuser or user.has_perm("sessions_app.view_auditevent"))


def repositories_usable_by(user: Any) -> QuerySet[Repository]:
    if user.is_superuser:
        return Repository.objects.all()
    return Repository.objects.filter(Q(users__id=user.pk) | Q(groups__user__id=user.pk)).distinct()


def repository_can_use(user: Any, repository: Repository) -> bool:
    return bool(user.is_authenticated) and (
        user.is_superuser or repositories_usable_by(user).filter(pk=repository.pk).exists()
    )


def can_attach_workspace(user: Any) -> bool:
    """May start a session on an existing server directory (under ``ACODE_ATTACH_ROOTS``)."""
    return bool(user.is_authenticated) and bool(
        user.is_superuser or user.has_perm("sessions_app.attach_workspace")
    )
