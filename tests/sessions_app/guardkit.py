"""Sessions in every run state, for the tests of the one guard (``permissions.action_refusal``).

Each state is reached through the real engine with scripted models, in this process
(``runkit.drive``): a template of a code stage, a review stage and the approval gate.

- ``none``: no run ever; the session is in Reviewer with a plan, a pending change and a
  queued job of its own.
- ``running``: the code stage's job is queued (the session in Coder).
- ``awaiting_input``: the Coder asked a person.
- ``blocked``: the Reviewer ended without a verdict.
- ``awaiting_approval``: the Reviewer approved; the run waits at its gate (the session in
  Reviewer, greet.py pending): where a direct approval would bypass the gate.
- ``finished``: that run was cancelled at its gate; the session was then put back as in
  ``none``.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Permission, User

from roles.models import Role
from sessions_app.models import (
    AgentSession,
    ApprovalStatus,
    AuditEvent,
    Job,
    PendingChange,
    RoleTransition,
    Run,
    RunApproval,
    RunQuestion,
    RunStage,
    RunStatus,
    WorkflowStage,
    WorkflowTemplate,
)
from sessions_app.services.changes import change_record
from sessions_app.services.jobs import job_create
from sessions_app.services.plans import plan_set
from sessions_app.services.runs import run_cancel, run_start
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition
from sessions_app.services.workspaces import git_dir_of
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import FIRST, calls, drive, review

STATES = ["none", "running", "awaiting_input", "awaiting_approval", "blocked", "finished"]
ACTIVE = ["running", "awaiting_input", "awaiting_approval", "blocked"]
TEMPLATE = "guarded"
NO_DIGEST = "0" * 64


@dataclass
class World:
    state: str
    session: AgentSession
    run: Run | None
    owner: User
    approver: User
    lead: User

    @property
    def job(self) -> Job:
        """The job a cancel is tried on: the run's current one, else the session's own."""
        return Job.objects.filter(session=self.session).latest("created_at")

    @property
    def digest(self) -> str:
        if self.run is None:
            return NO_DIGEST
        pending = self.run.approvals.filter(status=ApprovalStatus.PENDING).first()
        return pending.digest if pending is not None else NO_DIGEST


def people(django_user_model: Any) -> tuple[User, User, User]:
    """The session's owner (who starts its runs), an approver (approve_run, sees every
    session, acts on none) and a superuser (admin)."""
    owner = django_user_model.objects.create_user("owner", password="pw-owner-123")
    approver = django_user_model.objects.create_user("approver", password="pw-approver-123")
    for codename in ("approve_run", "view_all_sessions"):
        approver.user_permissions.add(Permission.objects.get(codename=codename))
    lead = django_user_model.objects.create_superuser("lead", password="pw-lead-123")
    return owner, User.objects.get(pk=approver.pk), lead


def _template() -> None:
    template = WorkflowTemplate.objects.create(slug=TEMPLATE, name="Guarded", risk_tier="high")
    for position, (purpose, role) in enumerate(
        [("code", "coder"), ("review", "reviewer"), ("approval", None)]
    ):
        WorkflowStage.objects.create(
            template=template,
            position=position,
            purpose=purpose,
            role=Role.objects.get(slug=role) if role else None,
        )


def _script(state: str) -> None:
    if state == "awaiting_input":
        scripted_model("coder", [calls(("ask_human", {"question": "Which language?"}))])
        return
    scripted_model("coder", [calls(("create_file", {"path": "greet.py", "content": FIRST}))])
    if state == "blocked":
        scripted_model("reviewer", [[{"content": "I have no verdict."}]])
    else:
        scripted_model("reviewer", [review("approve", "looks right")])


def _by_hand(session: AgentSession, owner: User) -> None:
    """What a person does without a run: a plan, a change, the Reviewer, a job."""
    plan_set(session=session, steps=["Write a.py"], user=owner)
    change_record(session=session, path="a.py", kind="created", diff="+a", user=owner)
    session_transition(session=session, to_role="reviewer", reason="Review it", user=owner)
    job_create(session=session, request="Explain the code", user=owner)


def world_in(state: str, owner: User, approver: User, lead: User) -> World:
    """A session (and its run) in ``state``."""
    _template()
    session = session_create(owner=owner, title="Guarded", task="A greeting helper")
    run = None
    if state == "none":
        _by_hand(session, owner)
    else:
        _script(state)
        run = run_start(
            session=session, request="Add a greeting helper", user=owner, template=TEMPLATE
        )
        if state != "running":
            run = drive(run)
        if state == "finished":
            run = run_cancel(run=run, user=owner)
            _by_hand(session, owner)
        expected = RunStatus.CANCELLED if state == "finished" else state
        assert run.status == expected, run.message
    session.refresh_from_db()
    return World(state, session, run, owner, approver, lead)


def _head(session: AgentSession) -> str:
    """The session branch's commit (its git directory is in server state)."""
    out = subprocess.run(
        [
            "git",
            f"--git-dir={git_dir_of(session.pk)}",
            "rev-parse",
            "--verify",
            "--quiet",
            f"refs/heads/{session.branch}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip()


def written(world: World) -> dict[str, Any]:
    """What an action on the session may change: a refused one leaves all of it as it was
    (the audit log may only grow by the refusal itself, where that is audited)."""
    session = AgentSession.objects.get(pk=world.session.pk)
    runs = Run.objects.filter(session=session)
    return {
        "session": (
            session.title,
            session.task,
            session.status,
            session.risk_tier,
            session.plan,
            session.current_role_id,
            session.active_run_id,
            session.transition_count,
        ),
        "transitions": list(RoleTransition.objects.filter(session=session).values_list("id")),
        "changes": list(
            PendingChange.objects.filter(session=session)
            .order_by("path")
            .values_list("path", "kind", "diff")
        ),
        "jobs": list(
            Job.objects.filter(session=session)
            .order_by("created_at")
            .values_list("id", "status", "cancel_requested")
        ),
        "runs": list(
            runs.order_by("created_at").values_list("id", "status", "cancel_requested", "message")
        ),
        "stages": list(
            RunStage.objects.filter(run__in=runs).order_by("id").values_list("id", "status")
        ),
        "approvals": list(
            RunApproval.objects.filter(run__in=runs).order_by("id").values_list("id", "status")
        ),
        "questions": list(
            RunQuestion.objects.filter(run__in=runs).order_by("id").values_list("id", "answer")
        ),
        "branch": _head(session),
        "audit": list(
            AuditEvent.objects.filter(session=session)
            .order_by("seq")
            .values_list("event_type", "result")
        ),
    }


def assert_nothing_written(
    before: dict[str, Any], after: dict[str, Any], refusal_rows: set[tuple[str, str]]
) -> None:
    for key in before:
        if key != "audit":
            assert after[key] == before[key], f"a refused action changed {key}"
    audit_before, audit_after = before["audit"], after["audit"]
    assert audit_after[: len(audit_before)] == audit_before
    added = set(audit_after[len(audit_before) :])
    assert added <= refusal_rows, f"a refused action wrote audit rows {added - refusal_rows}"
