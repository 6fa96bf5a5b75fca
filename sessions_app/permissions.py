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
``approve_run`` and sight of the session, and whoever started a run never approves it.
Workflow templates and risk signals are readable by every user; exporting and importing
them is for staff.

**Seeing a session and every action on it** (its details, role, plan, pending changes,
jobs, branch, and its runs) is decided over the table ``ACTION_RULES``, each question by
one function named for it (Zulip's ``access_*``): a view fetches and checks in one call,
``session_for(user, id, action)`` (``run_for``, ``job_for``: not visible, ACODE-API-404;
not theirs to act on, ACODE-API-403 or ACODE-RUN-008); a service asks ``action_check``
at its entry, under the session lock: who may, separation of duties and whether it may
happen now (``now_refusal``: while a run executes only that run changes the session; a
run's action needs it in the right status; approving changes needs ``approve_changes``),
decided there once for the API, the dashboard, the CLI, admin and workers; pages, sockets
and serializers show and offer only what ``can_see``, ``can_act`` and ``may_take`` allow.

Repositories: a user may start sessions on a repository that lists them or one of their
groups (superusers: every one). Attaching an existing server directory instead needs
``attach_workspace`` and a directory under ``ACODE_ATTACH_ROOTS``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from django.db.models import Q, QuerySet

from acode.errors import AcodeError
from acode.logs import bind_log_context
from roles.registry import registry
from sessions_app.models import (
    ACTIVE_RUN_STATUSES,
    FINAL_JOB_STATUSES,
    AgentSession,
    AuditEvent,
    Job,
    Repository,
    Run,
    RunStage,
    RunStatus,
    SessionStatus,
)

APPROVE_RUN_PERMISSION = "sessions_app.approve_run"


def can_act_on_all(user: Any) -> bool:
    """May change roles, plans and changes of any session (team lead)."""
    return bool(user.is_superuser or user.has_perm("sessions_app.act_on_all_sessions"))


def can_view_all(user: Any) -> bool:
    """May see every session; acting on all sessions implies seeing them."""
    return bool(user.has_perm("sessions_app.view_all_sessions") or can_act_on_all(user))


def sessions_visible_to(user: Any) -> QuerySet[AgentSession]:
    qs = AgentSession.objects.select_related("current_role", "owner")
    return qs if can_view_all(user) else qs.filter(owner_id=user.pk)


def can_view_all_audit(user: Any) -> bool:
    return bool(can_view_all(user) or user.has_perm("audit.view_auditevent"))


def audit_visible_to(user: Any) -> QuerySet[AuditEvent]:
    """Audit rows the user may read: all of them, or those of their own sessions."""
    if can_view_all_audit(user):
        return AuditEvent.objects.all()
    return AuditEvent.objects.filter(session__owner_id=user.pk)


def can_verify_audit(user: Any) -> bool:
    """May re-hash the whole audit log (it reads every row, so it is not for everyone)."""
    return bool(user.is_superuser or user.has_perm("audit.view_auditevent"))


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
    qs = Run.objects.select_related("session__current_role", "template")
    return qs if can_view_all(user) else qs.filter(session__owner_id=user.pk)


# -- every action on a session: who, and whether now ---------------------------------------


class SessionAction(StrEnum):
    """Seeing a session, and everything that changes it, its jobs, its branch or its runs."""

    VIEW = "view"  # its details, history, plan, changes, jobs, runs and their events
    SESSION_UPDATE = "session_update"  # title, task, status, risk tier
    TRANSITION = "transition"
    PLAN_SET = "plan_set"
    PLAN_STEP = "plan_step"
    CHANGE_RECORD = "change_record"  # by hand (API) or by a tool (change_track)
    CHANGES_APPROVE = "changes_approve"
    CHANGES_COMMIT = "changes_commit"  # onto the session branch
    JOB_CREATE = "job_create"
    JOB_CANCEL = "job_cancel"
    RUN_START = "run_start"
    RUN_ANSWER = "run_answer"
    RUN_APPROVE = "run_approve"
    RUN_REJECT = "run_reject"
    RUN_CANCEL = "run_cancel"
    CONSENT_ANSWER = "consent_answer"  # allow or deny a tool call a rule put to a person
    SESSION_ARCHIVE = "session_archive"  # free its checkout: read-only until restored
    SESSION_RESTORE = "session_restore"
    SEARCH = "search"  # a read of its workspace, which an archived session no longer has


SEE = "see"  # sight of the session: its owner, view_all_sessions, act_on_all_sessions
ACT = "act"  # the session's owner, or act_on_all_sessions
DECIDE = "decide"  # approve_run


@dataclass(frozen=True)
class ActionRule:
    """Who may take an action on a session and when.

    ``run_owned``: while a run executes in the session, only that run takes it.
    ``one_run``: refused while any run executes (starting a second one).
    ``run_statuses``: an action on a run needs the run in one of these.
    ``starter_may``: whoever started the run may take it (no: separation of duties).
    ``role_permission``: the session's current role must hold it.
    ``archived``: may be taken on an archived session (every other action is refused).
    ``idle``: refused while a run executes or a job is queued or running in the session.
    """

    access: str = ACT
    run_owned: bool = False
    one_run: bool = False
    run_statuses: tuple[str, ...] = ()
    starter_may: bool = True
    role_permission: str = ""
    archived: bool = False
    idle: bool = False


_SESSION_ACTION = ActionRule(run_owned=True)
AWAITING_ANSWER = (RunStatus.AWAITING_INPUT, RunStatus.BLOCKED)

ACTION_RULES: dict[SessionAction, ActionRule] = {
    SessionAction.VIEW: ActionRule(access=SEE, archived=True),
    SessionAction.SESSION_UPDATE: _SESSION_ACTION,
    SessionAction.TRANSITION: _SESSION_ACTION,
    SessionAction.PLAN_SET: _SESSION_ACTION,
    SessionAction.PLAN_STEP: _SESSION_ACTION,
    SessionAction.CHANGE_RECORD: _SESSION_ACTION,
    SessionAction.CHANGES_APPROVE: ActionRule(run_owned=True, role_permission="approve_changes"),
    SessionAction.CHANGES_COMMIT: _SESSION_ACTION,
    SessionAction.JOB_CREATE: _SESSION_ACTION,
    SessionAction.JOB_CANCEL: _SESSION_ACTION,  # of the run's own jobs; others may stop
    SessionAction.RUN_START: ActionRule(one_run=True),
    SessionAction.RUN_ANSWER: ActionRule(run_statuses=AWAITING_ANSWER),
    SessionAction.RUN_APPROVE: ActionRule(
        access=DECIDE, run_statuses=(RunStatus.AWAITING_APPROVAL,), starter_may=False
    ),
    SessionAction.RUN_REJECT: ActionRule(
        access=DECIDE, run_statuses=(RunStatus.AWAITING_APPROVAL,)
    ),
    SessionAction.RUN_CANCEL: ActionRule(run_statuses=ACTIVE_RUN_STATUSES),
    # Answering a job's question about one call is not changing the session: a run's too.
    SessionAction.CONSENT_ANSWER: ActionRule(),
    SessionAction.SESSION_ARCHIVE: ActionRule(archived=True, idle=True),
    SessionAction.SESSION_RESTORE: ActionRule(archived=True),
    SessionAction.SEARCH: ActionRule(access=SEE),
}

Target = AgentSession | Run | Job  # what an action is taken on: a session, its run or job
Found = TypeVar("Found", AgentSession, Run, Job)


def session_for(user: Any, pk: Any, action: SessionAction = SessionAction.VIEW) -> AgentSession:
    """The session ``pk`` if ``user`` may take ``action`` on it, else the one refusal: not
    visible (as for none), or not theirs to act on. What a view asks before it reads a body;
    whether the action may happen now is the service's, on its locked rows."""
    found = AgentSession.objects.select_related("owner", "current_role").filter(pk=pk).first()
    return _accessed(user, action, found, "session")


def run_for(user: Any, pk: Any, action: SessionAction = SessionAction.VIEW) -> Run:
    """The run ``pk``, if ``user`` may take ``action`` on it: as ``session_for``."""
    found = Run.objects.select_related("session", "template").filter(pk=pk).first()
    return _accessed(user, action, found, "run")


def job_for(user: Any, pk: Any, action: SessionAction = SessionAction.VIEW) -> Job:
    """The job ``pk``, if ``user`` may take ``action`` on it: as ``session_for``."""
    found = Job.objects.select_related("session", "role", "role_version").filter(pk=pk).first()
    return _accessed(user, action, found, "job")


def _accessed(user: Any, action: SessionAction, found: Found | None, what: str) -> Found:
    if found is None:
        raise not_visible(what)
    refusal = access_refusal(user, action, found)
    if refusal is not None:
        raise refusal
    bind_log_context(**found.log_keys)  # the request's later lines; its middleware unbinds
    return found


def access_refusal(user: Any, action: SessionAction, obj: Target) -> AcodeError | None:
    """Who may: may ``user`` see ``obj`` (a session, or one of its runs or jobs), then take
    ``action`` on it, whatever its state now? None if so, else the refusal to raise."""
    session = _session_of(obj)
    if not can_see(user, session):
        return not_visible(obj)
    return _who_refusal(ACTION_RULES[action], user, session)


def can_see(user: Any, obj: Target) -> bool:
    """May ``user`` see the session (of the run or job ``obj``): pages and sockets ask."""
    session = _session_of(obj)
    # Owners need no permission lookup to see their own session.
    return bool(user.is_authenticated) and (session.owner_id == user.pk or can_view_all(user))


def can_act(user: Any, session: AgentSession) -> bool:
    """May ``user`` act on the session, whatever its state now (the page's buttons): its
    owner, or someone allowed to act on all sessions (who therefore sees it too)."""
    return bool(user.is_authenticated) and (session.owner_id == user.pk or can_act_on_all(user))


def may_take(user: Any, action: SessionAction, obj: Target) -> bool:
    """Would ``user`` be allowed ``action`` on ``obj`` now, as its rows read at this moment?
    Pages and serializers offer a button only where it says yes; the service that does it
    decides, on its locked rows (``action_check``)."""
    run, job = (obj if isinstance(obj, Run) else None), (obj if isinstance(obj, Job) else None)
    return can_see(user, obj) and (
        action_refusal(action, session=_session_of(obj), user=user, run=run, job=job) is None
    )


def action_refusal(
    action: SessionAction,
    *,
    session: AgentSession,
    user: Any = None,
    run: Run | None = None,
    run_id: uuid.UUID | None = None,
    job: Job | None = None,
) -> AcodeError | None:
    """May the action be taken now? What the services ask at their entry, under the lock,
    on the rows they locked (``session``, and the ``run`` or ``job`` acted on). None if so,
    else the refusal. In order: may ``user`` take it (ACODE-API-403, -RUN-008; not sight:
    the view asked, ``session_for``), separation of duties (ACODE-RUN-009), then whether
    now (``now_refusal``: ACODE-RUN-003, -002, -004, ACODE-ROL-003).

    ``user``: None for the system (a worker, a command), whose access is not asked.
    ``run_id``: the run taking the action itself (its engine and its stages' jobs); while
    that run executes, it is the one actor allowed, and no person's access is asked of it.
    """
    rule = ACTION_RULES[action]
    acting_run = run_acting(session, run_id)
    if user is not None and not acting_run:
        refusal = _who_refusal(rule, user, session)
        if refusal is not None:
            return refusal
        if run is not None and not rule.starter_may and run.started_by_id == user.pk:
            return AcodeError(
                "ACODE-RUN-009",
                "You started this run, so you cannot approve it: another approver must.",
                {"started_by": user.get_username()},
            )
    return now_refusal(action, session=session, run=run, job=job, run_id=run_id)


def action_check(action: SessionAction, *, session: AgentSession, **kwargs: Any) -> None:
    """Raise ``action_refusal``'s answer, if it is a refusal."""
    refusal = action_refusal(action, session=session, **kwargs)
    if refusal is not None:
        raise refusal


def run_acting(session: AgentSession, run_id: uuid.UUID | None) -> bool:
    """Is ``run_id`` the run executing in the session (the one actor allowed while it does)?"""
    return run_id is not None and run_id == session.active_run_id


def not_visible(obj: Target | str) -> AcodeError:
    """The answer about a session, run or job the user may not see: the same as for one
    that does not exist, so it tells nothing. ``obj``: the object, or what it is."""
    what = obj if isinstance(obj, str) else _KIND[type(obj)]
    return AcodeError("ACODE-API-404", f"No {what} with that id is visible to you.")


_KIND: dict[type, str] = {AgentSession: "session", Run: "run", Job: "job"}


def _session_of(obj: Target) -> AgentSession:
    return obj if isinstance(obj, AgentSession) else obj.session


def _who_refusal(rule: ActionRule, user: Any, session: AgentSession) -> AcodeError | None:
    """The action's own access, for someone who sees the session."""
    if rule.access == SEE or (rule.access == ACT and can_act(user, session)):
        return None
    if rule.access == DECIDE:
        if user.has_perm(APPROVE_RUN_PERMISSION):
            return None
        return AcodeError(
            "ACODE-RUN-008",
            "Approving or rejecting runs needs the 'approve run' permission.",
            {"missing_permission": APPROVE_RUN_PERMISSION},
        )
    return AcodeError(
        "ACODE-API-403",
        "Only the session's owner, or someone allowed to act on all sessions, may do this.",
        {"missing_permission": "sessions_app.act_on_all_sessions"},
    )


def now_refusal(
    action: SessionAction,
    *,
    session: AgentSession,
    run: Run | None = None,
    job: Job | None = None,
    run_id: uuid.UUID | None = None,
) -> AcodeError | None:
    """Whether the action may happen now, whoever takes it (asked on locked rows)."""
    rule = ACTION_RULES[action]
    if session.status == SessionStatus.ARCHIVED and not rule.archived:
        return AcodeError(
            "ACODE-SES-007",
            f"Session {session.pk} is archived: it is read-only until a person restores it "
            f"({action.value} refused).",
            {"action": action.value},
        )
    live_jobs = session.jobs.exclude(status__in=FINAL_JOB_STATUSES)
    if rule.idle and (session.active_run_id or live_jobs.exists()):
        return AcodeError(
            "ACODE-SES-008",
            "The session is busy: a run executes or a job is queued or running in it. Wait "
            "for them to end, or cancel them, then try again.",
            {"run": str(session.active_run_id or "")},
        )
    acting_run = run_acting(session, run_id)
    if rule.run_owned and not acting_run and _run_owns(session, action, job):
        return AcodeError(
            "ACODE-RUN-003",
            f"The session is executing run {session.active_run_id}; while it does, only the "
            f"run changes the session ({action.value} refused). Cancel the run first.",
            {"run": str(session.active_run_id), "action": action.value},
        )
    if rule.one_run and session.active_run_id is not None:
        return AcodeError(
            "ACODE-RUN-002",
            f"The session is already executing run {session.active_run_id}; one run at a time.",
            {"run": str(session.active_run_id)},
        )
    if rule.run_statuses and run is not None and run.status not in rule.run_statuses:
        return _run_not_in(run, rule.run_statuses)
    if rule.role_permission:
        role = registry.by_id(session.current_role_id)
        if rule.role_permission not in role.access.permissions:
            return AcodeError(
                "ACODE-ROL-003",
                f"Approving changes is not allowed in role {role.name}.",
                {"role": role.slug, "missing_permission": rule.role_permission},
            )
    return None


def _run_owns(session: AgentSession, action: SessionAction, job: Job | None) -> bool:
    """Does the session's executing run own this action? A job left from before the run
    (not one of its stages') may still be stopped."""
    if session.active_run_id is None:
        return False
    if action == SessionAction.JOB_CANCEL and job is not None:
        stage_run = (
            RunStage.objects.filter(pk=job.run_stage_id).values_list("run_id", flat=True).first()
            if job.run_stage_id is not None
            else None
        )
        return bool(stage_run == session.active_run_id)
    return True


def _run_not_in(run: Run, statuses: tuple[str, ...]) -> AcodeError:
    if run.status not in ACTIVE_RUN_STATUSES:
        message = f"Run {run.pk} already ended ({run.status})."
    else:
        message = f"Run {run.pk} is {run.status}; this needs it to be {' or '.join(statuses)}."
    return AcodeError("ACODE-RUN-004", message, {"status": run.status, "needs": list(statuses)})


def can_manage_workflows(user: Any) -> bool:
    """May export and import workflow templates and risk signals as a whole (staff)."""
    return bool(user.is_authenticated and user.is_active and (user.is_staff or user.is_superuser))
