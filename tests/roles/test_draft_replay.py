"""A protected role's draft shows its replay: what the role decided lately, decided again
under the draft, before another admin publishes it (API detail and the draft's admin page,
for those who may change roles)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from roles.registry import registry
from sessions_app.agent.executor import tool_execute
from sessions_app.agent.tool_context import tool_context
from sessions_app.services.jobs import job_create
from tests.roles.test_drafts import ROLE, _admin, _api, alice, bob, protected  # noqa: F401
from tests.sessions_app.jobkit import session_in

pytestmark = pytest.mark.django_db


def _read_under_the_reviewer(user: Any, tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "README.md").write_text("hello\n")
    session = session_in(ROLE, user, workspace=tmp_path / "ws", change=True)
    job = job_create(session=session, request="t", user=user)
    registry.sync()
    outcome = tool_execute(
        session=session, role=registry.get(ROLE), tool="read_file",
        arguments={"path": "README.md"}, actor="job:test",
        context=tool_context(job, session, []), job=job,
    )  # fmt: skip
    assert outcome.status == "ok"


def test_a_drafts_detail_shows_what_it_would_deny_of_what_the_role_did(
    protected: Any,  # noqa: F811
    alice: Any,  # noqa: F811
    bob: Any,  # noqa: F811
    admin_user: Any,
    tmp_path: Path,
) -> None:
    _read_under_the_reviewer(admin_user, tmp_path)
    response = _api(alice).patch(
        f"/api/roles/{ROLE}/", {"permissions": ["approve_changes"]}, format="json"
    )
    assert response.status_code == 202, response.content
    draft = response.json()

    detail = _api(bob).get(f"/api/role-drafts/{draft['id']}/").json()
    replay = detail["replay"]
    assert replay["days"] == 7 and replay["allowed_to_denied"] == 1
    [group] = [g for g in replay["groups"] if g["change"] == "allowed->denied"]
    assert group["tool"] == "read_file" and group["examples"][0]["audit_id"]

    client = APIClient()
    client.force_login(bob)
    page = client.get(f"/admin/roles/roledraft/{draft['id']}/change/").content.decode()
    assert 'id="acode-draft-replay"' in page and "read_file" in page


def test_a_user_who_may_not_change_roles_sees_no_replay(
    protected: Any,  # noqa: F811
    alice: Any,  # noqa: F811
    user: Any,
) -> None:
    response = _api(alice).patch(f"/api/roles/{ROLE}/", {"description": "x"}, format="json")
    detail = _api(user).get(f"/api/role-drafts/{response.json()['id']}/").json()
    assert detail["replay"] is None
