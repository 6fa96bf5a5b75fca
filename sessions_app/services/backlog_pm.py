"""The Product Manager: a spec becomes proposed epics and tasks, and a finished project is
checked against its spec.

A project's Product Manager works in one session of the project's own
(``BacklogProject.pm_session``, made on first use, moved into the ``product-manager``
role), as jobs: a plan (``project_plan``: a person gives the spec) or a completeness check
(``completeness_checks``: the scheduler's tick, once each time every task is done). A job's
request is the spec (for a check, with the tasks done and the integration branch's files,
those as untrusted data) and reaches the model like every request, through the one channel.
Its ``propose_backlog`` calls (``pm_propose``) import into that project as proposals
(``backlog_import(proposed_by=<its role>)``): a person accepts them, unless the project lets
them through. One Product Manager job goes at a time per project (ACODE-BKL-005).
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, F, Max, Q, QuerySet

from acode.errors import AcodeError
from roles.registry import registry
from sessions_app.containment import branch_files, model_data
from sessions_app.models import (
    FINAL_JOB_STATUSES,
    AgentSession,
    BacklogProject,
    BacklogTask,
    Job,
    PmWork,
    TaskStatus,
)
from sessions_app.services.audit import actor_name
from sessions_app.services.backlog import backlog_import, backlog_publish
from sessions_app.services.backlog_integration import SCHEDULER, integration_git_dir
from sessions_app.services.jobs import job_create
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition

logger = logging.getLogger(__name__)

PM_ROLE = "product-manager"
# Tasks still to be carried out: while any is, the project is not done. (Proposed ones wait
# for a person; they are the last check's answer, not work in progress. Rejected ones are
# closed, never done: the check is told of them, so it does not propose them again.)
OPEN = (TaskStatus.BACKLOG, TaskStatus.IN_PROGRESS, TaskStatus.REVIEW, TaskStatus.BLOCKED)
MAX_FILES_SHOWN = 2000


def pm_role_exists() -> bool:
    return any(role.slug == PM_ROLE for role in registry.list_roles())


def pm_role_check() -> None:
    """Refuse (ACODE-BKL-006) when there is no ``product-manager`` role to plan in."""
    if not pm_role_exists():
        raise AcodeError(
            "ACODE-BKL-006",
            "There is no Product Manager role (product-manager) to plan in: an admin "
            "restores it (it is seeded).",
            {"role": PM_ROLE},
        )


def _pm_busy(project: BacklogProject) -> Job | None:
    """The project's Product Manager job still going, if one is."""
    if project.pm_job_id is None:
        return None
    job = Job.objects.get(pk=project.pm_job_id)
    return None if job.is_final else job


def _pm_job(project: BacklogProject, *, request: str, kind: str, actor: str) -> Job:
    """Queue a job in the project's Product Manager session (made on first use) in the
    product-manager role, and record it as the project's (``project`` locked)."""
    session = project.pm_session or session_create(
        owner=project.owner,
        title=f"{project.slug}: Product Manager"[:200],
        task=f"Plan and check the backlog of {project.title}"[:2000],
    )
    session_transition(
        session=session,
        to_role=PM_ROLE,
        reason=f"The Product Manager of backlog project {project.slug}",
        actor=actor,
    )
    job = job_create(session=session, request=request, actor=actor)
    project.pm_session = session
    project.pm_job, project.pm_job_kind, project.pm_job_open = job, kind, True
    project.save(update_fields=["pm_session", "pm_job", "pm_job_kind", "pm_job_open"])
    backlog_publish(project.pk)
    return job


def plan_request(project: BacklogProject, spec: str) -> str:
    """What the Product Manager is asked to plan: the project and its spec."""
    return (
        f"Plan the backlog of project {project.title!r} ({project.slug}) from its product "
        "spec below: propose its epics and tasks, each with acceptance criteria, a priority "
        "and its dependencies, with one propose_backlog call.\n\n## Spec\n" + spec.strip()
    )


@transaction.atomic
def project_plan(
    *, project: BacklogProject, spec: str, user: User | None = None, actor: str = ""
) -> Job:
    """A person gives the project's spec: it is kept as the project's description and the
    Product Manager plans from it (refused while its last job goes: ACODE-BKL-005)."""
    pm_role_check()
    if not spec.strip():
        raise AcodeError("ACODE-API-400", "The spec is empty.", {"field": "spec"})
    locked = BacklogProject.objects.select_for_update().get(pk=project.pk)
    going = _pm_busy(locked)
    if going is not None:
        raise AcodeError(
            "ACODE-BKL-005",
            f"The Product Manager is working on this project already ({locked.pm_job_kind}, "
            f"job {going.pk}, {going.status}); plan again when it is over.",
            {"job": str(going.pk), "kind": locked.pm_job_kind, "status": going.status},
        )
    locked.description = spec.strip()
    locked.save(update_fields=["description"])
    who = actor_name(user, actor)
    return _pm_job(locked, request=plan_request(locked, spec), kind=PmWork.PLAN, actor=who)


def pm_propose(
    *, session: AgentSession, document: Any, actor: str, proposed_by: str
) -> list[BacklogTask]:
    """A ``propose_backlog`` call: the document's epics and tasks join the backlog of the
    project this session is the Product Manager of, as proposals (``backlog_import``'s
    checks: ACODE-BKL-002, -004). ACODE-BKL-007 from a session that plans no project."""
    project = BacklogProject.objects.filter(pm_session=session).first()
    if project is None:
        raise AcodeError(
            "ACODE-BKL-007",
            "This session plans no backlog project: propose_backlog works only in a "
            "project's Product Manager session (acode backlog plan PROJECT SPEC).",
            {"session": str(session.pk)},
        )
    return backlog_import(project=project, document=document, actor=actor,
                          proposed_by=proposed_by)  # fmt: skip


# -- the completeness check ------------------------------------------------------------


_OPEN_TASKS = Count("tasks", filter=Q(tasks__status__in=OPEN))
_LAST_DONE = Max("tasks__id", filter=Q(tasks__status=TaskStatus.DONE))


def completeness_due() -> QuerySet[BacklogProject]:
    """Projects whose every task is done with one done since their last check."""
    return BacklogProject.objects.annotate(open_tasks=_OPEN_TASKS, last_done=_LAST_DONE).filter(
        open_tasks=0, last_done__gt=F("checked_through")
    )


def _done_state(project: BacklogProject) -> tuple[int, int]:
    """The project's open tasks and its newest done task's id (0: none)."""
    found = BacklogProject.objects.filter(pk=project.pk).aggregate(
        open_tasks=_OPEN_TASKS, last_done=_LAST_DONE
    )
    return int(found["open_tasks"] or 0), int(found["last_done"] or 0)


def _rejected_shown(project: BacklogProject) -> str:
    """The proposals a person rejected and why, as untrusted data (the Product Manager
    wrote their titles; a person, the reasons)."""
    rejected = [
        f"- {task.key}: {task.title}\n  rejected because: {task.reason}"
        for task in project.tasks.filter(status=TaskStatus.REJECTED).order_by("id")
    ]
    if not rejected:
        return "(none)"
    return model_data("\n".join(rejected), source="the proposals a person rejected")


def check_request(project: BacklogProject) -> str:
    """What a completeness check asks: the spec, the tasks done with their acceptance
    criteria, the files of the integration branch (untrusted data: a run wrote them) and
    the proposals a person rejected, with why (untrusted data too)."""
    tasks = []
    for task in project.tasks.filter(status=TaskStatus.DONE).order_by("id"):
        criteria = "".join(f"\n  - {c}" for c in task.acceptance_criteria)
        tasks.append(f"- {task.key}: {task.title}{criteria}")
    files = branch_files(integration_git_dir(project), project.integration_branch)
    shown = "\n".join(files[:MAX_FILES_SHOWN]) or "(the branch has no files)"
    if len(files) > MAX_FILES_SHOWN:
        shown += f"\n... and {len(files) - MAX_FILES_SHOWN} more"
    return (
        f"Completeness check of project {project.title!r} ({project.slug}): every task is "
        "done. Compare the spec with the tasks done and the files of the integration branch "
        f"{project.integration_branch}. Propose follow-up tasks with propose_backlog only for "
        "what the spec asks and nothing done covers (new keys); if nothing is missing, "
        "propose nothing and say the project is complete. Do not propose again what a person "
        "rejected (listed last, with why).\n\n## Spec\n"
        + (project.description.strip() or "(no spec was given)")
        + "\n\n## Tasks done\n"
        + "\n".join(tasks)
        + f"\n\n## Files on {project.integration_branch}\n"
        + model_data(shown, source=f"the files of the branch {project.integration_branch}")
        + "\n\n## Proposals rejected\n"
        + _rejected_shown(project)
    )


@transaction.atomic
def completeness_check_start(project_id: Any) -> Job | None:
    """Start the project's completeness check if it is due (re-checked under the project's
    lock, so two ticks start one); None when it is not, or the Product Manager is busy (the
    next tick tries again)."""
    project = BacklogProject.objects.select_for_update().get(pk=project_id)
    open_tasks, last_done = _done_state(project)
    if open_tasks or last_done <= project.checked_through:
        return None
    if _pm_busy(project) is not None:
        return None
    job = _pm_job(project, request=check_request(project), kind=PmWork.CHECK, actor=SCHEDULER)
    BacklogProject.objects.filter(pk=project.pk).update(checked_through=last_done)
    return job


def completeness_checks() -> list[str]:
    """The tick's part: a check for every project just done. The slugs of those started."""
    started: list[str] = []
    if not pm_role_exists():
        return started  # no Product Manager: nothing to check with
    for project_id, slug in completeness_due().values_list("pk", "slug"):
        try:
            if completeness_check_start(project_id) is not None:
                started.append(slug)
        except AcodeError as exc:  # the broker away: the next tick starts it
            logger.warning("backlog project %s: completeness check not started: %s", slug, exc)
        except Exception:  # one project's failure must not stop the others'
            logger.exception("backlog project %s: completeness check failed to start", slug)
    return started


def pm_jobs_follow() -> None:
    """Show on the kanban the end of every Product Manager job that ended since the last
    tick (its state is read from the job; this only tells the open boards)."""
    ended = BacklogProject.objects.filter(pm_job_open=True, pm_job__status__in=FINAL_JOB_STATUSES)
    for project_id in list(ended.values_list("pk", flat=True)):
        with transaction.atomic():
            if BacklogProject.objects.filter(pk=project_id, pm_job_open=True).update(
                pm_job_open=False
            ):
                backlog_publish(project_id)
