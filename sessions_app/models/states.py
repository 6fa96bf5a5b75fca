"""The status machines of runs, stages, jobs, approvals, consents and backlog tasks, declared once as data.

Every status a service writes goes through ``status_move`` (one row, saved) or
``status_move_where`` (a compare-and-set on rows still in an allowed status), which refuse a
change the table does not list. ``tests/sessions_app/test_states.py`` fails when code
elsewhere assigns a status by hand.

A small table of our own rather than a library (django-fsm-2, viewflow): the machines are
four dicts, the writes are plain ORM, and nothing here needs signals, decorators or
per-transition permissions (who may act is ``permissions.action_refusal``'s question).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import models

from sessions_app.models.backlog import BacklogTask, TaskStatus
from sessions_app.models.consents import ConsentStatus, ToolConsent
from sessions_app.models.jobs import Job, JobStatus
from sessions_app.models.runs import (
    ApprovalStatus,
    Run,
    RunApproval,
    RunStage,
    RunStatus,
    StageStatus,
)


@dataclass(frozen=True)
class StateMachine:
    """The statuses an object may move to from each status (final ones lead nowhere)."""

    name: str
    moves: Mapping[str, frozenset[str]]

    def allows(self, current: str, target: str) -> bool:
        return target in self.moves.get(current, frozenset())

    def sources(self, target: str) -> list[str]:
        """Every status from which ``target`` may be reached."""
        return sorted(s for s, targets in self.moves.items() if target in targets)

    @property
    def final(self) -> frozenset[str]:
        return frozenset(s for s, targets in self.moves.items() if not targets)


class IllegalMove(RuntimeError):
    """A status change the machine does not declare: a bug in acode, never user input."""


_RUN_WAITING = frozenset({RunStatus.RUNNING, RunStatus.CANCELLED, RunStatus.FAILED})
RUN = StateMachine(
    "run",
    {
        RunStatus.RUNNING: frozenset(
            {
                RunStatus.AWAITING_INPUT,
                RunStatus.AWAITING_APPROVAL,
                RunStatus.BLOCKED,
                RunStatus.SUCCEEDED,
                RunStatus.FAILED,
                RunStatus.CANCELLED,
            }
        ),
        RunStatus.AWAITING_INPUT: _RUN_WAITING,
        RunStatus.BLOCKED: _RUN_WAITING,
        # At the gate: a new request (re-opened), approved (then committed), rejected, or
        # cancelled; a commit that fails fails the run.
        RunStatus.AWAITING_APPROVAL: frozenset(
            {
                RunStatus.AWAITING_APPROVAL,
                RunStatus.SUCCEEDED,
                RunStatus.REJECTED,
                RunStatus.CANCELLED,
                RunStatus.FAILED,
            }
        ),
        RunStatus.SUCCEEDED: frozenset(),
        RunStatus.FAILED: frozenset(),
        RunStatus.REJECTED: frozenset(),
        RunStatus.CANCELLED: frozenset(),
    },
)

STAGE = StateMachine(
    "stage",
    {
        StageStatus.RUNNING: frozenset(
            {
                StageStatus.AWAITING_INPUT,
                StageStatus.SUCCEEDED,
                StageStatus.FAILED,
                StageStatus.CANCELLED,
            }
        ),
        # An answer resumes the stage with a new job.
        StageStatus.AWAITING_INPUT: frozenset({StageStatus.RUNNING, StageStatus.CANCELLED}),
        StageStatus.AWAITING_APPROVAL: frozenset({StageStatus.SUCCEEDED, StageStatus.CANCELLED}),
        StageStatus.SUCCEEDED: frozenset(),
        StageStatus.FAILED: frozenset(),
        StageStatus.CANCELLED: frozenset(),
    },
)

_JOB_ENDS = frozenset(
    {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.LIMIT_EXCEEDED}
)
JOB = StateMachine(
    "job",
    {
        # A queued job ends without running when it is cancelled, expires or was lost twice.
        JobStatus.QUEUED: frozenset({JobStatus.RUNNING, *_JOB_ENDS}),
        # A running job whose worker died is queued again (``jobs_recover_stale``).
        JobStatus.RUNNING: frozenset({JobStatus.QUEUED, *_JOB_ENDS}),
        **{status: frozenset() for status in _JOB_ENDS},
    },
)

APPROVAL = StateMachine(
    "approval",
    {
        ApprovalStatus.PENDING: frozenset(
            {
                ApprovalStatus.APPROVED,
                ApprovalStatus.REJECTED,
                ApprovalStatus.EXPIRED,
                ApprovalStatus.SUPERSEDED,
            }
        ),
        ApprovalStatus.APPROVED: frozenset(),
        ApprovalStatus.REJECTED: frozenset(),
        ApprovalStatus.EXPIRED: frozenset(),
        ApprovalStatus.SUPERSEDED: frozenset(),
    },
)

CONSENT = StateMachine(
    "consent",
    {
        ConsentStatus.PENDING: frozenset(
            {
                ConsentStatus.ALLOWED,
                ConsentStatus.DENIED,
                ConsentStatus.TIMED_OUT,
                ConsentStatus.CANCELLED,
            }
        ),
        ConsentStatus.ALLOWED: frozenset(),
        ConsentStatus.DENIED: frozenset(),
        ConsentStatus.TIMED_OUT: frozenset(),
        ConsentStatus.CANCELLED: frozenset(),
    },
)

# A backlog task (issue 40): proposed by the Product Manager until a person accepts it; the
# scheduler starts it; its run's review, merge or block moves it on; a person unblocks it.
# A person may instead reject a proposal: that is final (closed, never done).
TASK = StateMachine(
    "task",
    {
        TaskStatus.PROPOSED: frozenset({TaskStatus.BACKLOG, TaskStatus.REJECTED}),
        TaskStatus.BACKLOG: frozenset({TaskStatus.IN_PROGRESS, TaskStatus.BLOCKED}),
        TaskStatus.IN_PROGRESS: frozenset(
            {TaskStatus.REVIEW, TaskStatus.DONE, TaskStatus.BLOCKED, TaskStatus.BACKLOG}
        ),
        TaskStatus.REVIEW: frozenset(
            {TaskStatus.DONE, TaskStatus.IN_PROGRESS, TaskStatus.BLOCKED, TaskStatus.BACKLOG}
        ),
        TaskStatus.BLOCKED: frozenset({TaskStatus.BACKLOG}),
        TaskStatus.DONE: frozenset(),
        TaskStatus.REJECTED: frozenset(),
    },
)

MACHINES: dict[type[models.Model], StateMachine] = {
    Run: RUN,
    RunStage: STAGE,
    Job: JOB,
    RunApproval: APPROVAL,
    ToolConsent: CONSENT,
    BacklogTask: TASK,
}


def _machine(model: type[models.Model]) -> StateMachine:
    try:
        return MACHINES[model]
    except KeyError:  # pragma: no cover - a programming error
        raise IllegalMove(f"{model.__name__} has no status machine") from None


def status_move(
    obj: Run | RunStage | Job | RunApproval | ToolConsent | BacklogTask,
    target: str,
    **fields: Any,
) -> None:
    """Move one object to ``target`` (with ``fields`` set alongside) and save those fields.

    Raises ``IllegalMove`` for a change its machine does not declare."""
    machine = _machine(type(obj))
    current = str(obj.status)
    if not machine.allows(current, target):
        raise IllegalMove(f"{machine.name} {obj.pk}: {current} -> {target} is not a declared move")
    obj.status = target
    for name, value in fields.items():
        setattr(obj, name, value)
    update = ["status", *fields]
    if any(f.name == "updated_at" for f in obj._meta.concrete_fields):
        update.append("updated_at")
    obj.save(update_fields=update)


def status_move_where(
    queryset: models.QuerySet[Any], current: str | list[str], target: str, **fields: Any
) -> int:
    """Move the rows of ``queryset`` still in ``current`` to ``target``; how many moved.

    A compare-and-set: a row another writer moved first is left alone."""
    machine = _machine(queryset.model)
    sources = [current] if isinstance(current, str) else list(current)
    for source in sources:
        if not machine.allows(source, target):
            raise IllegalMove(f"{machine.name}: {source} -> {target} is not a declared move")
    return int(queryset.filter(status__in=sources).update(status=target, **fields))
