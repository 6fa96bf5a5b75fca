"""What approved work becomes: a commit on the session branch that the run and the session
record (sha, message, branch, files), pushed as ``acode/<session>`` to a remote an admin
marked pushable (a bare repository here), audited, its credentials never shown, and a
push that fails leaves the commit standing."""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from acode.celery import app as celery_app
from acode.errors import AcodeError
from sessions_app.models import AgentSession, AuditEvent, DeliveredCommit, PushStatus, Repository
from sessions_app.services.changes import changes_approve, pending_digest
from sessions_app.services.deliveries import delivered_commit_push
from sessions_app.services.runs import run_start
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition
from sessions_app.services.workspaces import git_dir_of
from tests.sessions_app.jobkit import scripted_model, server_write
from tests.sessions_app.runkit import (
    FIRST,
    bare_remote,
    calls,
    drive,
    remote_branch,
    review,
    script_tester,
)

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-token-7f3a"
SECRET_REMOTE = f"https://alice:{TOKEN}@127.0.0.1:9/app.git"


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return bare_remote(tmp_path / "remote.git")


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    before = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = before


def pushable_session(user: User, remote: Path, *, pushable: bool = True) -> AgentSession:
    Repository.objects.create(name="app", source=str(remote), pushable=pushable).users.add(user)
    return session_create(owner=user, title="Greeting", task="Add greet()", repository="app")


def branch_tip(session: AgentSession) -> str:
    return git(f"--git-dir={git_dir_of(session.pk)}", "rev-parse", f"refs/heads/{session.branch}")


def script_low_run() -> None:
    scripted_model(
        "coder", [calls(("create_file", {"path": "greet.py", "content": FIRST}), final="ok")]
    )
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", [review("approve", "looks right")])


def approve_by_hand(session: AgentSession, user: User, summary: str = "Add greet()") -> int:
    """A change written in Coder, approved in Reviewer (a review outside a run)."""
    session_transition(session=session, to_role="planner", reason="plan", user=user)
    from sessions_app.services.plans import plan_set

    plan_set(session=session, steps=["Add greet"], user=user)
    session_transition(session=session, to_role="coder", reason="code", user=user)
    server_write(session, "greet.py", FIRST)
    session_transition(session=session, to_role="reviewer", reason="review", user=user)
    digest = pending_digest(session)
    return changes_approve(session=session, summary=summary, user=user, digest=digest).approved


def test_a_run_records_its_commit_and_pushes_it_as_the_session_branch(
    user: User, remote: Path
) -> None:
    session = pushable_session(user, remote)
    script_low_run()
    run = drive(run_start(session=session, request="Add a greeting helper", user=user))
    assert run.status == "succeeded", run.message

    commit = DeliveredCommit.objects.get(session=session)
    assert commit.run_id == run.pk
    assert commit.sha == branch_tip(session)
    assert commit.branch == f"acode/{session.pk}"
    assert commit.subject.startswith(f"Run {str(run.pk)[:8]}: Add a greeting helper")
    body = git(f"--git-dir={git_dir_of(session.pk)}", "log", "-1", "--format=%b", commit.sha)
    assert body.startswith("Approved by Reviewer (the run's review), in role ")
    assert commit.files == [{"path": "greet.py", "kind": "created", "added": 2, "removed": 0}]
    assert commit.push_status == PushStatus.PENDING and remote_branch(remote, session.branch) == ""

    # The push task's work: the remote gets branch acode/<session> at the commit, audited.
    pushed = delivered_commit_push(commit.pk)
    assert pushed is not None and pushed.push_status == PushStatus.PUSHED
    assert pushed.pushed_at is not None and pushed.push_remote == str(remote)
    assert remote_branch(remote, session.branch) == commit.sha
    assert git(f"--git-dir={remote}", "rev-parse", "refs/heads/main") == session.base_commit
    event = AuditEvent.objects.get(session=session, event_type="BranchPushed")
    assert (event.result, event.target, event.details["commit"]) == (
        "pushed",
        session.branch,
        commit.sha,
    )
    # A second delivery of the task changes nothing.
    assert delivered_commit_push(commit.pk).push_status == PushStatus.PUSHED
    assert AuditEvent.objects.filter(session=session, event_type="BranchPushed").count() == 1


def test_approving_by_hand_queues_the_push_after_commit(
    user: User, remote: Path, eager_tasks: None, django_capture_on_commit_callbacks: Any
) -> None:
    session = pushable_session(user, remote)
    with django_capture_on_commit_callbacks(execute=True):
        assert approve_by_hand(session, user) == 1
    commit = DeliveredCommit.objects.get(session=session)
    assert commit.run_id is None and commit.approved_by == "dev"
    assert commit.subject == "Add greet()"
    assert commit.push_status == PushStatus.PUSHED
    assert remote_branch(remote, session.branch) == commit.sha == branch_tip(session)


def test_a_repository_not_marked_pushable_is_never_pushed(user: User, remote: Path) -> None:
    session = pushable_session(user, remote, pushable=False)
    approve_by_hand(session, user)
    commit = DeliveredCommit.objects.get(session=session)
    assert commit.push_status == PushStatus.NONE and commit.push_remote == ""
    assert delivered_commit_push(commit.pk).push_status == PushStatus.NONE
    assert remote_branch(remote, session.branch) == ""


def test_a_failed_push_is_recorded_and_leaves_the_commit_standing(user: User, remote: Path) -> None:
    session = pushable_session(user, remote)
    approve_by_hand(session, user)
    commit = DeliveredCommit.objects.get(session=session)
    shutil.rmtree(remote)  # the remote is gone

    failed = delivered_commit_push(commit.pk)
    assert failed is not None and failed.push_status == PushStatus.FAILED
    assert failed.pushed_at is None and failed.push_message
    assert branch_tip(session) == commit.sha  # the commit stands
    event = AuditEvent.objects.get(session=session, event_type="BranchPushed")
    assert event.result == "failed" and event.details["message"] == failed.push_message


def test_credentials_in_the_remote_are_never_shown(
    user: User, remote: Path, admin_user: User, caplog: pytest.LogCaptureFixture
) -> None:
    session = pushable_session(user, remote)
    approve_by_hand(session, user)
    Repository.objects.filter(name="app").update(source=SECRET_REMOTE)
    commit = DeliveredCommit.objects.get(session=session)

    with caplog.at_level(logging.INFO):
        failed = delivered_commit_push(commit.pk)
    assert failed is not None and failed.push_status == PushStatus.FAILED
    assert failed.push_remote == "https://***@127.0.0.1:9/app.git"
    shown = [
        failed.push_remote,
        failed.push_message,
        str(AuditEvent.objects.get(event_type="BranchPushed").details),
        caplog.text,
    ]
    api = APIClient()
    api.force_authenticate(user)
    shown.append(api.get(f"/api/sessions/{session.pk}/commits/").content.decode())
    page = Client()
    page.force_login(user)
    shown.append(page.get(f"/sessions/{session.pk}/").content.decode())
    admin = Client()
    admin.force_login(admin_user)
    shown.append(admin.get("/admin/sessions_app/repository/").content.decode())
    repo = Repository.objects.get(name="app")
    form = admin.get(f"/admin/sessions_app/repository/{repo.pk}/change/").content.decode()
    shown.append(form)
    shown.append(admin.get("/admin/sessions_app/deliveredcommit/").content.decode())
    for text in shown:
        assert TOKEN not in text and "alice" not in text
    assert "https://***@127.0.0.1:9/app.git" in form

    # Saving the form with the masked URL keeps the stored credentials.
    response = admin.post(
        f"/admin/sessions_app/repository/{repo.pk}/change/",
        {
            "name": "app",
            "source": "https://***@127.0.0.1:9/app.git",
            "pushable": "on",
            "users": [user.pk],
            "description": "changed",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    repo.refresh_from_db()
    assert repo.source == SECRET_REMOTE and repo.description == "changed"


def test_a_clone_that_fails_does_not_show_the_sources_credentials(user: User) -> None:
    Repository.objects.create(name="private", source=SECRET_REMOTE).users.add(user)
    with pytest.raises(AcodeError) as failed:
        session_create(owner=user, title="x", repository="private")
    assert failed.value.code == "ACODE-SES-006"
    assert TOKEN not in failed.value.message and "alice" not in failed.value.message


def test_a_long_summary_makes_a_subject_cut_between_words_and_the_body_names_the_approver(
    user: User, remote: Path
) -> None:
    session = pushable_session(user, remote)
    words = "Add a greeting helper that says hello to each name it is given, kindly and at once"
    assert approve_by_hand(session, user, summary=f"{words}\n\nmore") == 1
    commit = DeliveredCommit.objects.get(session=session)
    assert (
        commit.subject == "Add a greeting helper that says hello to each name it is given, kindly…"
    )
    body = git(f"--git-dir={git_dir_of(session.pk)}", "log", "-1", "--format=%b", commit.sha)
    assert body.startswith("Approved by dev, in role Reviewer of acode session ")
