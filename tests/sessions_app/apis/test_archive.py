"""Archiving a session frees its files and makes it read-only; restoring brings its
checkout back as it was (its branch, with every pending change on top). Through the API,
the CLI's endpoint, the dashboard and the backlog's done tasks."""

from __future__ import annotations

import io
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from sessions_app.containment import session_layer_path, workspace_key
from sessions_app.models import AgentSession, AuditEvent, Job, JobStatus, PendingChange
from sessions_app.services.changes import changes_approve, pending_digest
from sessions_app.services.jobs import job_create
from sessions_app.services.search_index import index_dir
from sessions_app.services.transitions import session_transition
from sessions_app.services.workspaces import git_dir_of
from tests.sessions_app.jobkit import server_write, session_in

pytestmark = pytest.mark.django_db

Archive = Callable[..., Any]


@pytest.fixture
def post(api: APIClient, django_capture_on_commit_callbacks: Any) -> Archive:
    """POST to a session's action, its after-commit work run (the files freed)."""

    def call(sid: Any, action: str) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return api.post(f"/api/sessions/{sid}/{action}/")

    return call


def delivered_session(user: User) -> AgentSession:
    """A session with one commit on its branch (README.md) and two pending changes after it
    (src/app.py written, README.md deleted)."""
    session = session_in("coder", user)
    server_write(session, "README.md", "# app\n")
    session_transition(session=session, to_role="reviewer", reason="review", user=user)
    changes_approve(session=session, summary="Readme", user=user, digest=pending_digest(session))
    session_transition(session=session, to_role="default", reason="back", user=user)
    session = session_in_role(session, user, "coder")
    server_write(session, "src/app.py", "print('hi')\n")
    server_write(session, "README.md", None)
    return AgentSession.objects.get(pk=session.pk)


def session_in_role(session: AgentSession, user: User, role: str) -> AgentSession:
    for step in ("planner", role):
        session_transition(session=session, to_role=step, reason="test", user=user)
    return AgentSession.objects.get(pk=session.pk)


def test_archiving_frees_the_files_and_restoring_brings_back_what_was_there(
    post: Archive, api: APIClient, user: User
) -> None:
    session = delivered_session(user)
    workspace = Path(session.workspace)
    layer = session_layer_path(Path(settings.ACODE_LAYERS_ROOT), str(session.pk))
    (layer / ".venv").mkdir(parents=True)
    (layer / ".venv" / "cache").write_text("made again by the next command")
    secrets_index = Path(settings.ACODE_INDEX_ROOT) / workspace_key(workspace)
    assert secrets_index.is_dir() and (workspace / "src/app.py").is_file()
    index_dir(workspace).mkdir(parents=True, exist_ok=True)

    archived = post(session.pk, "archive")
    assert archived.status_code == 200, archived.content
    assert archived.json()["status"] == "archived"
    assert not workspace.exists() and not layer.exists()
    assert not secrets_index.exists() and not index_dir(workspace).exists()
    assert not list(workspace.parent.glob(f".{workspace.name}.freed-*")), "nothing left behind"
    git_dir = git_dir_of(session.pk)
    assert git_dir.is_dir(), "the branch, its commits and the pending content are kept"
    history = api.get(f"/api/sessions/{session.pk}/history/").json()
    assert [h["to_role"] for h in history][-1] == "coder", "its history is kept"
    assert api.get(f"/api/sessions/{session.pk}/commits/").json()[0]["message"].startswith("Readme")
    row = AuditEvent.objects.filter(session_id=session.pk, result="archived").get()
    assert row.actor == user.username and row.details["status"]["to"] == "archived"
    again = post(session.pk, "archive")
    assert again.status_code == 200 and AuditEvent.objects.filter(result="archived").count() == 1

    restored = post(session.pk, "restore")
    assert restored.status_code == 200 and restored.json()["status"] == "active"
    assert (workspace / "src/app.py").read_text() == "print('hi')\n", "a pending change is back"
    assert not (workspace / "README.md").exists(), "a pending delete is back too"
    shown = subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{session.branch}:README.md"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert shown.stdout == "# app\n"
    assert secrets_index.is_dir(), "the secret index is made again"
    assert not layer.exists(), "what the layer kept is made again by a command"
    pending = api.get(f"/api/sessions/{session.pk}/changes/").json()
    assert sorted(c["path"] for c in pending) == ["README.md", "src/app.py"]
    assert AuditEvent.objects.filter(session_id=session.pk, result="restored").count() == 1


def test_an_archived_session_refuses_every_change_until_restored(
    post: Archive, api: APIClient, user: User
) -> None:
    session = session_in("planner", user)
    assert post(session.pk, "archive").status_code == 200
    sid = session.pk
    attempts = {
        "transition": api.post(
            f"/api/sessions/{sid}/transition/", {"to_role": "default", "reason": "x"}, format="json"
        ),
        "plan": api.put(f"/api/sessions/{sid}/plan/", {"steps": [{"title": "a"}]}, format="json"),
        "job": api.post(f"/api/sessions/{sid}/jobs/", {"request": "hi"}, format="json"),
        "run": api.post(f"/api/sessions/{sid}/runs/", {"request": "hi"}, format="json"),
        "patch": api.patch(f"/api/sessions/{sid}/", {"title": "new"}, format="json"),
        "search": api.post(f"/api/sessions/{sid}/search/", {"query": "jwt"}, format="json"),
    }
    for what, response in attempts.items():
        assert response.status_code == 409, (what, response.content)
        body = response.json()
        assert body["code"] == "ACODE-SES-007", (what, body)
        assert "archived" in body["message"] and "restore" in body["message"]
    assert api.get(f"/api/sessions/{sid}/").json()["title"] == "t", "nothing was written"
    assert not Job.objects.filter(session_id=sid).exists()
    assert post(sid, "restore").status_code == 200
    moved = api.post(
        f"/api/sessions/{sid}/transition/", {"to_role": "default", "reason": "x"}, format="json"
    )
    assert moved.status_code == 200, moved.content


def test_a_busy_session_is_not_archived_and_status_is_not_a_way_around(
    post: Archive, api: APIClient, user: User
) -> None:
    session = session_in("planner", user)
    job = job_create(session=session, request="Explain the code", user=user)
    busy = post(session.pk, "archive")
    assert busy.status_code == 409 and busy.json()["code"] == "ACODE-SES-008"
    assert Path(session.workspace).is_dir()
    assert AgentSession.objects.get(pk=session.pk).status == "active"
    Job.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)
    patched = api.patch(f"/api/sessions/{session.pk}/", {"status": "archived"}, format="json")
    assert patched.status_code == 400, patched.content
    assert AgentSession.objects.get(pk=session.pk).status == "active"
    assert Path(session.workspace).is_dir()
    schema = SchemaGenerator().get_schema(request=None, public=True)
    schemas = schema["components"]["schemas"]
    status = schemas["SessionUpdateInputRequest"]["properties"]["status"]
    assert "archive/" in status["description"]
    assert schemas["SessionUpdateInputStatusEnum"]["enum"] == ["active", "paused", "completed"]
    archive_doc = schema["paths"]["/api/sessions/{id}/archive/"]["post"]["responses"]
    assert "ACODE-SES-008" in archive_doc["409"]["description"]
    transition_doc = schema["paths"]["/api/sessions/{id}/transition/"]["post"]["responses"]
    assert "ACODE-SES-007" in transition_doc["409"]["description"]


def test_only_who_may_act_archives_and_an_attached_directory_is_never_removed(
    post: Archive, user: User, django_user_model: Any, tmp_path: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    (tmp_path / "keep.txt").write_text("mine")
    session = session_in("default", user, workspace=tmp_path)
    stranger = APIClient()
    stranger.force_authenticate(django_user_model.objects.create_user("eve", password="pw-e-123"))
    hidden = stranger.post(f"/api/sessions/{session.pk}/archive/")
    assert hidden.status_code == 404 and hidden.json()["code"] == "ACODE-API-404"
    assert post(session.pk, "archive").status_code == 200
    assert (tmp_path / "keep.txt").read_text() == "mine", "an attached directory stays"
    assert post(session.pk, "restore").json()["status"] == "active"


def test_the_dashboard_archives_and_restores(
    user: User, django_capture_on_commit_callbacks: Any
) -> None:
    session = session_in("default", user)
    browser = Client()
    browser.force_login(user)
    page = browser.get(f"/sessions/{session.pk}/").content.decode()
    assert "data-archive" in page and "data-archived" not in page
    assert 'id="session-search-index"' in page
    with django_capture_on_commit_callbacks(execute=True):
        done = browser.post(f"/sessions/{session.pk}/archive/", follow=True)
    shown = done.content.decode()
    assert "Session archived" in shown and "data-archived" in shown and "data-restore" in shown
    assert "restore it to change its role" in shown
    assert 'id="session-search-index"' not in shown, (
        "no index of a freed checkout is polled or made"
    )
    assert not Path(session.workspace).exists()
    board = browser.get("/").content.decode()
    assert str(session.pk) not in board, "the board leaves archived sessions out"
    assert str(session.pk) in browser.get("/", {"status": "archived"}).content.decode()
    # A pushed header has no CSRF token in its form: it posts through htmx and is answered
    # with a navigation (tests/browser: the same in a real browser).
    back = browser.post(
        f"/sessions/{session.pk}/archive/", {"restore": "1"}, HTTP_HX_REQUEST="true"
    )
    assert back.headers["HX-Redirect"] == f"/sessions/{session.pk}/"
    assert "Session restored" in browser.get(back.headers["HX-Redirect"]).content.decode()
    assert Path(session.workspace).is_dir()
    assert str(session.pk) in browser.get("/").content.decode()


def test_a_worker_host_frees_its_layers_of_archived_sessions(post: Archive, user: User) -> None:
    """A layer lives on the host that ran the session's commands: the others are freed by
    ``acode_free_layers`` (which every worker runs when it starts)."""
    archived, active = session_in("default", user), session_in("default", user)
    assert post(archived.pk, "archive").status_code == 200
    root = Path(settings.ACODE_LAYERS_ROOT)
    layers = {s.pk: session_layer_path(root, str(s.pk)) for s in (archived, active)}
    gone = session_layer_path(root, "0f0e0d0c-0b0a-4908-8706-050403020100")  # no such session
    for layer in [*layers.values(), gone]:
        (layer / "build").mkdir(parents=True)
    out = io.StringIO()
    call_command("acode_free_layers", stdout=out)
    said = out.getvalue()  # (and any layer an earlier test's rolled-back session left)
    assert f"  {archived.pk}\n" in said and f"  {gone.name}\n" in said
    assert str(active.pk) not in said
    assert not layers[archived.pk].exists() and not gone.exists()
    assert (layers[active.pk] / "build").is_dir(), "an active session's layer stays"


def test_a_restore_that_fails_leaves_nothing_and_can_be_tried_again(
    post: Archive, user: User
) -> None:
    session = delivered_session(user)
    workspace = Path(session.workspace)
    assert post(session.pk, "archive").status_code == 200
    change = PendingChange.objects.get(session=session, path="src/app.py")
    blob = change.content
    PendingChange.objects.filter(pk=change.pk).update(content="0" * 40)  # a lost object
    failed = post(session.pk, "restore")
    assert failed.status_code == 500 and failed.json()["code"] == "ACODE-SES-006"
    assert AgentSession.objects.get(pk=session.pk).status == "archived"
    assert not workspace.exists(), "no half-made checkout to be taken for a whole one"
    assert not list(workspace.parent.glob(f".{workspace.name}.restoring-*"))
    PendingChange.objects.filter(pk=change.pk).update(content=blob)
    assert post(session.pk, "restore").status_code == 200
    assert (workspace / "src/app.py").read_text() == "print('hi')\n"
