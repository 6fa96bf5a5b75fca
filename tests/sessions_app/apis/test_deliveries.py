"""What a session delivered, through the REST API: a run's commit in its detail, the
session's commits, and one commit (or the whole branch) as a patch."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from sessions_app.models import DeliveredCommit, RunStatus
from sessions_app.services.runs import run_start
from sessions_app.services.sessions import session_create
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import FIRST, SECOND, calls, drive, review, script_tester

pytestmark = pytest.mark.django_db


def client(user: User) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def two_runs(user: User) -> tuple[Any, Any, Any]:
    """Two low runs in one session: the first creates greet.py, the second changes it."""
    scripted_model(
        "coder",
        [
            calls(("create_file", {"path": "greet.py", "content": FIRST}), final="created"),
            calls(("write_file", {"path": "greet.py", "content": SECOND}), final="changed"),
        ],
    )
    scripted_model("tester", [script_tester(), script_tester()])
    scripted_model("reviewer", [review("approve", "ok"), review("approve", "ok")])
    session = session_create(owner=user, title="Greeting", task="greet")
    first = drive(run_start(session=session, request="Add greet", user=user))
    second = drive(run_start(session=session, request="Greet by name", user=user))
    assert first.status == second.status == RunStatus.SUCCEEDED, second.message
    return session, first, second


def test_a_runs_detail_and_the_session_say_what_was_delivered(user: User) -> None:
    session, first, second = two_runs(user)
    api = client(user)
    detail = api.get(f"/api/runs/{second.pk}/").json()
    commit = detail["commit"]
    stored = DeliveredCommit.objects.get(run=second)
    assert commit["sha"] == stored.sha and commit["branch"] == f"acode/{session.pk}"
    assert commit["subject"].startswith(f"Run {str(second.pk)[:8]}: Greet by name")
    assert commit["files"] == [{"path": "greet.py", "kind": "modified", "added": 2, "removed": 2}]
    assert commit["run"] == str(second.pk) and commit["push_status"] == "none"
    assert commit["approved_by"] == "Reviewer (the run's review)"
    assert commit["patch_url"] == f"/api/sessions/{session.pk}/patch/?commit={stored.sha}"

    listed = api.get(f"/api/sessions/{session.pk}/commits/").json()
    assert [c["run"] for c in listed] == [str(second.pk), str(first.pk)]  # newest first

    one = api.get(commit["patch_url"])
    assert one.status_code == 200 and one["Content-Type"] == "text/x-patch"
    assert f"acode-{stored.sha[:12]}.patch" in one["Content-Disposition"]
    text = one.content.decode()
    assert "Greet by name" in text and "+def greet(name):" in text
    assert "Add greet" not in text  # only that commit
    branch = api.get(f"/api/sessions/{session.pk}/patch/").content.decode()
    assert "Add greet" in branch and "Greet by name" in branch


def test_a_patch_is_only_of_a_commit_the_session_delivered(
    user: User, django_user_model: Any
) -> None:
    session, first, _ = two_runs(user)
    api = client(user)
    other = session_create(owner=user, title="Other")
    sha = DeliveredCommit.objects.get(run=first).sha
    unknown = api.get(f"/api/sessions/{other.pk}/patch/?commit={sha}")
    assert unknown.status_code == 404 and unknown.json()["code"] == "ACODE-API-404"
    for bad in ("HEAD", "main~1", "--output=/tmp/x", sha[:12]):
        refused = api.get(f"/api/sessions/{session.pk}/patch/", {"commit": bad})
        assert refused.status_code == 400, bad
    stranger = django_user_model.objects.create_user("eve")
    assert client(stranger).get(f"/api/sessions/{session.pk}/commits/").status_code == 404
    viewer = django_user_model.objects.create_user("viewer")
    viewer.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    assert len(client(viewer).get(f"/api/sessions/{session.pk}/commits/").json()) == 2
