"""A session on an attached directory: approval says exactly what it did (the changes are
in the directory, applied when made; nothing is committed), and the API, the CLI
(``changes approve``, ``changes delivered``, ``run show``) and the dashboard say the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from sessions_app.models import AgentSession, DeliveredCommit, RunStatus, WorkflowStage
from sessions_app.services.runs import run_start
from sessions_app.services.transitions import session_transition
from tests.cli.conftest import make_runner
from tests.sessions_app.jobkit import scripted_model, session_in
from tests.sessions_app.runkit import calls, drive, review

pytestmark = pytest.mark.django_db(transaction=True)

ATTACHED = "they are in the attached directory"


@pytest.fixture
def attached(tmp_path: Path, user: Any) -> AgentSession:
    ws = tmp_path / "attached"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "guide.md").write_text("# Guide\n")
    return session_in("coder", user, workspace=ws)


def test_approving_in_an_attached_directory_says_it_committed_nothing(
    attached: AgentSession, user: Any, live_server: Any, tmp_path: Path
) -> None:
    ws = Path(attached.workspace)
    scripted_model("coder", [calls(*[
        ("create_file", {"path": f"docs/n{i}.md", "content": f"note {i}\n"}) for i in range(5)
    ])])  # fmt: skip
    from sessions_app.agent.loop import run_job
    from sessions_app.services.jobs import job_create

    job = run_job(job_create(session=attached, request="Write notes", user=user).pk)
    assert job.status == "succeeded", job.error_message
    assert (ws / "docs" / "n4.md").read_text() == "note 4\n"  # applied to the directory
    session_transition(session=attached, to_role="reviewer", reason="review", user=user)
    cli = make_runner(live_server.url, Token.objects.create(user=user).key, tmp_path / "cfg")
    sid = str(attached.pk)
    approved = cli("changes", "approve", "--session", sid, "-m", "Notes")
    assert approved.exit_code == 0, approved.output
    assert "[SUCCESS] Approved 5 pending changes; " + ATTACHED in approved.stdout.replace("\n", " ")
    assert "nothing was committed" in approved.stdout and "committed on" not in approved.stdout
    assert "Approved in the attached directory" in approved.stdout
    delivered = cli("changes", "delivered", "--session", sid)
    assert "Approved in the attached directory" in delivered.stdout, delivered.output
    assert "Delivered: " not in delivered.stdout
    listed = json.loads(cli("changes", "delivered", "--session", sid, "--json").stdout)
    assert [(c["committed"], c["sha"], c["patch_url"], len(c["files"])) for c in listed] == [
        (False, "", "", 5)
    ]
    page = Client()
    page.force_login(user)
    html = page.get(f"/sessions/{sid}/").content.decode()
    assert "Applied, not committed" in html and "applied when they were made" in html


def test_a_run_in_an_attached_directory_reports_what_it_delivered(
    attached: AgentSession, user: Any, live_server: Any, tmp_path: Path
) -> None:
    scripted_model("coder", [calls(("create_file", {"path": "docs/a.md", "content": "a\n"}))])
    scripted_model("tester", [[{"content": "nothing to test"}]])
    scripted_model("reviewer", [review("approve", "fine")])
    session_transition(session=attached, to_role="default", reason="back", user=user)
    run = drive(run_start(session=attached, request="Add a note", user=user))
    assert run.status == RunStatus.SUCCEEDED, run.message
    (entry,) = DeliveredCommit.objects.filter(session=attached)
    assert (entry.committed, entry.run_id, entry.files[0]["path"]) == (False, run.pk, "docs/a.md")
    cli = make_runner(live_server.url, Token.objects.create(user=user).key, tmp_path / "cfg")
    shown = cli("run", "show", str(run.pk))
    assert shown.exit_code == 0, shown.output
    assert "Approved in the attached directory" in shown.stdout
    assert "no changes to deliver" not in shown.stdout
    assert WorkflowStage.objects.exists()
