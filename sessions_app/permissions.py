"""Who may see and do what with sessions, jobs and the audit log: the one place it is decided.

The API, the dashboard pages, the websocket consumers and admin all ask here.

| who | sees | acts on (transitions, plans, changes, jobs) | verifies the audit chain |
| --- | --- | --- | --- |
| a session's owner | their own sessions, their jobs and audit rows | their own sessions | no |
| ``view_all_sessions`` | every session and every audit row | their own | no |
| ``act_on_all_sessions`` | every session (acting implies seeing) | every session | no |
| ``view_auditevent`` | every audit row | their own | yes |
| superuser | everything | everything | yes |

Runs follow their session: who sees the session sees its runs; who acts on it starts,
answers and cancels them. Approving or rejecting a run at its gate needs
``approve_run`` and sight of the session, and whoever started a run never approves it
(the service refuses that too, and audits the attempt). Workflow templates and risk
signals are readable by every user; exporting and importing them is for staff.

Repositories: a user may start sessions on a repository that lists them or one of their
groups (superusers: every one). Attaching an existing server directory instead needs
``attach_workspace`` and a directory under ``ACODE_ATTACH_ROOTS``.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from sessions_app.models import (
    ACTIVE_RUN_STATUSES,
    AgentSession,
    AuditEvent,
    Job,
    Repository,
    Run,
    RunStatus,
)

APPROVE_RUN_PERMISSION = "sessions_app.approve_run"


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


def runs_visible_to(user: Any) -> QuerySet[Run]:
    """Runs of the sessions the user may see."""
    qs = Run.objects.select_related("session", "template")
    return qs if can_view_all(user) else qs.filter(session__owner_id=user.pk)


def run_can_act(user: Any, run: Run) -> bool:
    """May answer or cancel the run (starting one: ``session_can_act`` on its session)."""
    return session_can_act(user, run.session)


def run_can_decide(user: Any, run: Run) -> bool:
    """May approve or reject runs at the gate of this one's session (the service also
    refuses the starter's own approval)."""
    return session_can_view(user, run.session) and bool(user.has_perm(APPROVE_RUN_PERMISSION))


def run_can_answer(user: Any, run: Run) -> bool:
    return run.status in (RunStatus.AWAITING_INPUT, RunStatus.BLOCKED) and run_can_act(user, run)


def run_can_approve(user: Any, run: Run) -> bool:
    """May approve this run now: it waits at the gate, and the user may decide and did not
    start it (separation of duties)."""
    return (
        run.status == RunStatus.AWAITING_APPROVAL
        and run.started_by_id != user.pk
        and run_can_decide(user, run)
    )


def run_can_cancel(user: Any, run: Run) -> bool:
    return run.status in ACTIVE_RUN_STATUSES and run_can_act(user, run)


def can_manage_workflows(user: Any) -> bool:
    """May export and import workflow templates and risk signals as a whole (staff)."""
    return bool(user.is_authenticated and user.is_active and (user.is_staff or user.is_superuser))
