"""An outside agent's hook is its hot path (a hook on every tool call): what it reads and
writes, and that nothing it saves on makes a decision stale."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from roles.registry import registry
from roles.services import role_write
from sessions_app.models import AgentSession, AuditEvent, OutsideSession
from sessions_app.services.outside import sessions as outside_sessions
from tests.sessions_app.outside.kit import decision, hook_client, limited_coder, pre

pytestmark = pytest.mark.django_db
URL = "/api/hooks/claude-code/"


@pytest.fixture
def hooks(user: Any) -> APIClient:
    limited_coder()
    return hook_client(user)[0]


def _write(root: Path, name: str) -> dict[str, Any]:
    return pre(root, "Write", {"file_path": str(root / name), "content": "x"})


def test_a_known_sessions_event_is_two_statements_and_moves_the_chain_head(
    hooks: APIClient, tmp_path: Path
) -> None:
    assert decision(hooks.post(URL, _write(tmp_path, "src/a.py"), format="json"))[0] == "allow"
    with CaptureQueriesContext(connection) as queries:
        said = decision(hooks.post(URL, _write(tmp_path, "setup.py"), format="json"))
    assert said[0] == "deny"
    # The session, locked, with the role registry's stamp and whether the hook token is
    # still live; the event. (No token read of its own once this process has seen it, no
    # separate stamp read, no join once the session is known, no second write to move the
    # chain head: the database moves it with the event.)
    # (The test runs in a transaction of its own: the hook's is a savepoint here.)
    statements = [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert len(statements) == 2, statements
    assert "roles_registrystamp" in statements[0] and "sessions_app_hooktoken" in statements[0]
    assert "sessions_app_outsidesession" not in statements[0]
    session = AgentSession.objects.get(pk=OutsideSession.objects.get().session_id)
    newest = AuditEvent.objects.filter(session=session).order_by("-seq").first()
    assert newest is not None and newest.event_type == "ToolDenied"
    assert (session.audit_seq, session.audit_hash) == (newest.seq, newest.hash)


def test_role_data_changed_by_another_process_is_in_force_on_the_next_call(
    hooks: APIClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert decision(hooks.post(URL, _write(tmp_path, "src/a.py"), format="json"))[0] == "allow"
    # Another process edits the Coder: this process's registry is not told, only the
    # stamp in the database moves (as it does for every other web process and worker).
    with monkeypatch.context() as patch:
        patch.setattr(registry, "invalidate", lambda: None)
        role_write(data={"write_paths": ["docs/**"]}, create=False, slug="coder", actor="elsewhere")
    said, reason = decision(hooks.post(URL, _write(tmp_path, "src/b.py"), format="json"))
    assert said == "deny" and "write_paths" in reason


def test_a_session_id_this_process_remembers_wrongly_is_found_again(
    hooks: APIClient, tmp_path: Path, user: Any
) -> None:
    assert decision(hooks.post(URL, _write(tmp_path, "src/a.py"), format="json"))[0] == "allow"
    key = (user.pk, "claude-code", "s-1")
    outside_sessions._known_ids[key] = uuid.uuid4()  # a session that is not there (any more)
    assert decision(hooks.post(URL, _write(tmp_path, "setup.py"), format="json"))[0] == "deny"
    assert OutsideSession.objects.count() == 1  # found again by the agent's id, not made anew
    assert outside_sessions._known_ids[key] == OutsideSession.objects.get().session_id


def test_a_token_whose_user_is_deactivated_is_refused_on_the_next_call(
    hooks: APIClient, tmp_path: Path, user: Any
) -> None:
    assert decision(hooks.post(URL, _write(tmp_path, "src/a.py"), format="json"))[0] == "allow"
    type(user).objects.filter(pk=user.pk).update(is_active=False)
    refused = hooks.post(URL, _write(tmp_path, "src/b.py"), format="json")
    assert refused.status_code == 401 and refused.json()["code"] == "ACODE-API-401"
    assert not (tmp_path / "src" / "b.py").exists()
    # Nothing was recorded for it: the refusal rolled the event back.
    assert not AuditEvent.objects.filter(target__contains="b.py").exists()
