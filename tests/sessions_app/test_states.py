"""The status machines of runs, stages, jobs and approvals: declared once, and the only
way a status is written."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import models

from sessions_app.models import (
    FINAL_JOB_STATUSES,
    FINAL_RUN_STATUSES,
    ApprovalStatus,
    JobStatus,
    Run,
    RunStatus,
    StageStatus,
)
from sessions_app.models.states import (
    APPROVAL,
    JOB,
    RUN,
    STAGE,
    IllegalMove,
    StateMachine,
    status_move,
)
from sessions_app.services.runs import run_cancel, run_start
from sessions_app.services.sessions import session_create

ROOT = Path(__file__).resolve().parents[2]
STATES = ROOT / "sessions_app" / "models" / "states.py"


@pytest.mark.parametrize(
    ("machine", "statuses"),
    [(RUN, RunStatus), (STAGE, StageStatus), (JOB, JobStatus), (APPROVAL, ApprovalStatus)],
)
def test_every_status_has_its_moves_declared(
    machine: StateMachine, statuses: type[models.TextChoices]
) -> None:
    assert set(machine.moves) == set(statuses.values)


def test_final_statuses_lead_nowhere() -> None:
    assert RUN.final == set(FINAL_RUN_STATUSES)
    assert JOB.final == set(FINAL_JOB_STATUSES)


def _status_writes(path: Path) -> list[str]:
    """``x.status = ...``, ``.update(status=...)`` in one module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == "status":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} assigns .status")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "update"
            and any(k.arg == "status" for k in node.keywords)
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} .update(status=...)")
    return found


def test_no_status_is_written_outside_the_state_machines() -> None:
    writes = [
        write
        for path in sorted((ROOT / "sessions_app").rglob("*.py"))
        if "migrations" not in path.parts and path != STATES
        for write in _status_writes(path)
    ]
    assert writes == []


@pytest.mark.django_db
def test_a_move_the_machine_does_not_declare_is_refused_and_writes_nothing(user: User) -> None:
    session = session_create(owner=user, title="states")
    run = run_cancel(run=run_start(session=session, request="Add a greeting helper"), user=user)
    ended = run.status
    assert ended == RunStatus.CANCELLED
    with pytest.raises(IllegalMove):
        status_move(run, RunStatus.RUNNING)
    assert Run.objects.get(pk=run.pk).status == ended
