"""Workspaces users own: a session works in a checkout of its own under
ACODE_WORKSPACES_ROOT, never on an arbitrary server directory, and approved changes
become commits on its branch."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from acode.errors import AcodeError
from sessions_app.agent.loop import run_job
from sessions_app.models import AgentSession, JobStatus, Repository
from sessions_app.services.changes import changes_approve, pending_digest
from sessions_app.services.jobs import job_create
from sessions_app.services.plans import plan_set
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition
from sessions_app.services.workspaces import git_dir_of, workspace_patch
from tests.sessions_app.jobkit import allow_attach, scripted_model

pytestmark = pytest.mark.django_db


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def sgit(session: AgentSession, *args: str) -> str:
    """git on the session's repository: its git directory is in server state."""
    where = [f"--git-dir={git_dir_of(session.pk)}", f"--work-tree={session.workspace}"]
    return git(*where, *args, cwd=Path(session.workspace))


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    repo = tmp_path / "upstream"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("x = 1\n")
    (repo / "README.md").write_text("# upstream\n")
    git("add", ".", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "initial", cwd=repo)
    return repo


def refusal(owner: Any, workspace: str) -> AcodeError:
    with pytest.raises(AcodeError) as refused:
        session_create(owner=owner, title="x", workspace=workspace)
    return refused.value


@pytest.mark.parametrize("path", ["/", "/etc", "/root", "/no/such/directory"])
def test_a_plain_user_cannot_attach_a_server_directory(user: Any, path: str) -> None:
    error = refusal(user, path)
    assert error.code == "ACODE-SES-002"


def test_a_refusal_says_the_same_whether_the_path_exists_or_not(user: Any, tmp_path: Path) -> None:
    existing, missing = refusal(user, str(tmp_path)), refusal(user, str(tmp_path / "nope"))
    assert (existing.code, existing.message) == (missing.code, missing.message)
    allow_attach(user)
    outside_root = refusal(user, "/etc")
    assert (outside_root.code, outside_root.message) == (existing.code, existing.message)


def test_another_users_workspace_cannot_be_attached(user: Any, django_user_model: Any) -> None:
    other = django_user_model.objects.create_user("eve", password="pw-eve-12345")
    theirs = session_create(owner=user, title="mine")
    allow_attach(other)  # even with the permission: workspaces are not under an attach root
    assert refusal(other, theirs.workspace).code == "ACODE-SES-002"


def test_a_permitted_user_attaches_under_an_allowed_root(user: Any, tmp_path: Path) -> None:
    allow_attach(user)
    session = session_create(owner=user, title="attached", workspace=str(tmp_path))
    assert session.workspace == str(tmp_path.resolve()) and not session.workspace_managed


def test_a_new_session_gets_an_empty_repository_on_its_own_branch(user: Any, settings: Any) -> None:
    session = session_create(owner=user, title="fresh")
    path = Path(session.workspace)
    assert path.parent == Path(settings.ACODE_WORKSPACES_ROOT)
    assert session.branch == f"acode/{session.pk}"
    assert sgit(session, "symbolic-ref", "--short", "HEAD") == session.branch
    assert not (path / ".git").exists(), "git metadata lives outside the workspace"


def test_repositories_are_only_for_the_users_and_groups_listed(
    user: Any, django_user_model: Any, upstream: Path
) -> None:
    repo = Repository.objects.create(name="app", source=str(upstream))
    unknown = pytest.raises(AcodeError)
    with unknown as no_such:
        session_create(owner=user, title="x", repository="nope")
    with pytest.raises(AcodeError) as not_listed:
        session_create(owner=user, title="x", repository="app")
    assert no_such.value.code == not_listed.value.code == "ACODE-SES-005"
    assert no_such.value.message == not_listed.value.message
    team = Group.objects.create(name="team")
    repo.groups.add(team)
    member = django_user_model.objects.create_user("gil", password="pw-gil-12345")
    member.groups.add(team)
    session = session_create(owner=member, title="x", repository="app")
    assert (Path(session.workspace) / "src" / "app.py").read_text() == "x = 1\n"


def test_a_registered_repository_works_end_to_end(user: Any, upstream: Path) -> None:
    """session -> Coder job -> approved commit on the session branch -> patch."""
    Repository.objects.create(name="app", source=str(upstream)).users.add(user)
    session = session_create(owner=user, title="JWT", task="Add JWT", repository="app")
    workspace = Path(session.workspace)
    assert sgit(session, "rev-parse", "--abbrev-ref", "HEAD") == f"acode/{session.pk}"
    assert not (workspace / ".git").exists()
    plan_set(session=session, steps=["Write the auth module"], user=user)
    for role in ("planner", "coder"):
        session_transition(session=session, to_role=role, reason="go", user=user)
    scripted_model(
        "coder",
        [
            {
                "tool_calls": [
                    {
                        "name": "create_file",
                        "arguments": {"path": "src/auth.py", "content": "TOKEN = 1\n"},
                    }
                ]
            },
            {"content": "done"},
        ],
    )
    job = run_job(job_create(session=session, request="Write src/auth.py", user=user).pk)
    assert job.status == JobStatus.SUCCEEDED, job.error_message
    session_transition(session=session, to_role="reviewer", reason="review", user=user)
    digest = pending_digest(session)
    done = changes_approve(session=session, summary="Add the auth module", user=user, digest=digest)
    assert done.approved == 1
    session = AgentSession.objects.get(pk=session.pk)
    assert sgit(session, "log", "-1", "--format=%s", f"acode/{session.pk}") == "Add the auth module"
    assert sgit(session, "show", f"acode/{session.pk}:src/auth.py") == "TOKEN = 1"
    assert sgit(session, "status", "--porcelain") == "", "the index follows the branch"
    assert git("rev-parse", "main", cwd=upstream) == session.base_commit, "upstream untouched"
    patch = workspace_patch(session)
    assert "Subject: [PATCH] Add the auth module" in patch and "+TOKEN = 1" in patch

    api = APIClient()
    api.force_authenticate(user)
    response = api.get(f"/api/sessions/{session.pk}/patch/")
    assert response.status_code == 200 and b"+TOKEN = 1" in response.content
    assert [r["name"] for r in api.get("/api/repositories/").json()] == ["app"]
