"""What a session delivered, from the CLI: a session created on a registered repository
(``session create --repository``), a high run approved by a second user, then the commit,
its branch, files, push and patch in ``run approve``, ``run show`` and ``changes``.

Jobs (and the push) run eagerly inside the live server's requests, as in test_runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessions_app.models import DeliveredCommit, Repository, Run
from tests.cli.approvers import approver_runner
from tests.cli.conftest import RunCli
from tests.cli.test_runs import eager_jobs, in_order
from tests.sessions_app import runkit
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import FIRST, PLAN_ONE_STEP, calls, review

pytestmark = pytest.mark.django_db(transaction=True)

__all__ = ["eager_jobs"]  # the fixture, used by name


@pytest.fixture
def approver_cli(live_server: Any, django_user_model: Any, config_dir: Path) -> RunCli:
    return approver_runner(live_server.url, django_user_model, config_dir)


def script_high_run() -> None:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("explorer", [[{"content": "greet.py does not exist yet."}]])
    scripted_model(
        "coder", [calls(("create_file", {"path": "greet.py", "content": FIRST}), final="ok")]
    )
    scripted_model("tester", [runkit.script_tester()])
    scripted_model("reviewer", [review("approve", "looks right")])


def test_session_create_takes_a_repository_by_name(cli: RunCli, user: Any, tmp_path: Path) -> None:
    remote = runkit.bare_remote(tmp_path / "app.git")
    Repository.objects.create(name="app", source=str(remote), description="The app").users.add(user)
    listed = cli("session", "repositories")
    assert listed.exit_code == 0 and "app" in listed.stdout and "The app" in listed.stdout
    created = cli("session", "create", "Greeting", "--repository", "app")
    assert created.exit_code == 0, created.output
    assert "Repository: app" in created.stdout and "Branch: acode/" in created.stdout
    session = json.loads(cli("session", "show", "--json").stdout)
    assert session["repository"] == "app" and session["branch"] == f"acode/{session['id']}"
    unknown = cli("session", "create", "x", "--repository", "nope")
    assert unknown.exit_code == 3 and "ACODE-SES-005" in unknown.stderr


def test_an_approved_run_says_what_was_delivered_and_how_to_get_it(
    cli: RunCli, approver_cli: RunCli, user: Any, tmp_path: Path, eager_jobs: None
) -> None:
    remote = runkit.bare_remote(tmp_path / "app.git")
    Repository.objects.create(name="app", source=str(remote), pushable=True).users.add(user)
    assert cli("session", "create", "Greeting", "-r", "app").exit_code == 0
    script_high_run()
    assert cli("run", "Add a greeting helper", "--risk", "high", "--no-follow").exit_code == 0
    run = Run.objects.get()
    rid, branch = str(run.pk)[:8], f"acode/{run.session_id}"

    approved = approver_cli("run", "approve", rid)
    assert approved.exit_code == 0, approved.output
    commit = DeliveredCommit.objects.get()
    short = commit.sha[:12]
    delivered = [
        f"Delivered: commit {short} on branch {branch}",
        f"Run {rid}: Add a greeting helper",
        "Approved by approver at ",
        "Files changed (1):",
        "created   greet.py  +2 -0",
        f"Pushed as {branch} to {remote}",
        f"Get it: acode changes patch --commit {short} -o {short}.patch (then git am it)",
    ]
    in_order(approved.stdout, f"[SUCCESS] Run {rid} succeeded", *delivered)
    assert runkit.remote_branch(remote, branch) == commit.sha

    in_order(cli("run", "show", rid).stdout, "Approval ", *delivered)
    changes = cli("changes")
    assert changes.exit_code == 0, changes.output
    in_order(changes.stdout, "No pending changes.", "Delivered: 1 commit, newest first")
    in_order(changes.stdout, f"  Commit {short} on branch {branch}", *delivered[1:])
    assert json.loads(cli("changes", "show", "--json").stdout) == []  # pending, as before
    assert json.loads(cli("changes", "delivered", "--json").stdout)[0]["sha"] == commit.sha

    target = tmp_path / "greet.patch"
    written = cli("changes", "patch", "--commit", commit.sha[:7], "-o", str(target))
    assert written.exit_code == 0, written.output
    assert f"apply it with `git am {target}`" in written.stdout
    assert "+def greet():" in target.read_text()
    whole = cli("changes", "patch")
    assert (
        f"Subject: [PATCH] Run {rid}: Add a greeting helper" in whole.stdout
        and "+def greet():" in whole.stdout
    )
    unknown = cli("changes", "patch", "--commit", "ffff")
    assert unknown.exit_code == 3 and "Unknown commit" in unknown.stderr


def test_nothing_delivered_says_so(cli: RunCli, session_id: str) -> None:
    assert cli("changes").stdout.strip() == "No pending changes."
    assert "Nothing delivered yet" in cli("changes", "delivered").stdout
    assert json.loads(cli("changes", "delivered", "--json").stdout) == []
