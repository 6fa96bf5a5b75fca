"""acode.db: precompiled, pipelined statements read and write exactly what the ORM does."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from rest_framework.authtoken.models import Token

from acode.db import (
    PendingRow,
    execute_insert,
    execute_update,
    fetch_one,
    pipelined,
    statement_cursor,
)
from sessions_app.models import AgentSession, AuditEvent, RoleTransition
from sessions_app.services import session_create, session_transition

pytestmark = pytest.mark.django_db

# Writes go through either cursor: the ORM's, or the one that prepares on PostgreSQL.
CURSORS = pytest.mark.parametrize(
    "open_cursor", [connection.cursor, statement_cursor], ids=["orm-cursor", "statement-cursor"]
)


@pytest.fixture
def session(django_user_model: Any) -> AgentSession:
    owner = django_user_model.objects.create_user("ada", password="pw-ada-123")
    created = session_create(owner=owner, title="Pending rows", task="t")
    AgentSession.objects.filter(pk=created.pk).update(
        plan=[{"number": 1, "title": "Read the code", "status": "pending"}]
    )
    return AgentSession.objects.get(pk=created.pk)


def test_a_pending_row_is_the_row_the_orm_reads(session: AgentSession) -> None:
    with transaction.atomic(), pipelined():
        first = PendingRow(AgentSession, session.pk, for_update=True)
        second = PendingRow(AgentSession, str(session.pk))  # sent before either is read
        missing = PendingRow(AgentSession, uuid.uuid4())
        rows = [first.get(), second.get(), missing.get()]
    assert rows[2] is None
    for row in rows[:2]:
        assert row is not None
        for field in AgentSession._meta.concrete_fields:
            assert getattr(row, field.attname) == getattr(session, field.attname), field.name
        assert row.plan[0]["title"] == "Read the code"  # JSON decoded, not a string
        assert row._state.adding is False and row._state.db == "default"


def test_fetch_one_follows_a_relation(session: AgentSession) -> None:
    token = Token.objects.create(user=session.owner)
    user = fetch_one(User, token.key, lookup="auth_token__key")
    assert user is not None and user.pk == session.owner.pk and user.username == "ada"
    assert fetch_one(User, "no-such-token", lookup="auth_token__key") is None


def test_only_single_equality_lookups_are_accepted() -> None:
    with pytest.raises(ValueError, match="one equality lookup"):
        fetch_one(User, "ad", lookup="username__startswith")


@CURSORS
def test_inserts_and_updates_write_what_save_would(session: AgentSession, open_cursor: Any) -> None:
    before = session.transition_count
    row = RoleTransition(
        session=session,
        seq=before + 1,
        from_role_id=session.current_role_id,
        to_role_id=session.current_role_id,
        role_version_id=session.role_version_id,
        reason="raw insert",
        actor="test",
        created_at=session.role_since,
    )
    with transaction.atomic(), pipelined(), open_cursor() as cursor:
        execute_insert(cursor, row)
        execute_update(
            cursor, AgentSession, session.pk, {"transition_count": before + 1, "last_reason": "x"}
        )
    stored = RoleTransition.objects.get(session=session, seq=before + 1)
    assert (stored.reason, stored.actor, stored.created_at) == (
        "raw insert",
        "test",
        row.created_at,
    )
    session.refresh_from_db()
    assert (session.transition_count, session.last_reason) == (before + 1, "x")


@CURSORS
def test_a_failed_pipelined_write_raises_djangos_error_and_writes_nothing(
    session: AgentSession, open_cursor: Any
) -> None:
    from django.db import IntegrityError

    duplicate = RoleTransition(
        session=session,
        seq=1,  # the initial entry already has seq 1
        to_role_id=session.current_role_id,
        role_version_id=session.role_version_id,
        reason="again",
        actor="test",
        created_at=session.role_since,
    )
    with (
        pytest.raises(IntegrityError),
        transaction.atomic(),
        pipelined(),
        open_cursor() as cursor,
    ):
        execute_update(cursor, AgentSession, session.pk, {"last_reason": "lost"})
        execute_insert(cursor, duplicate)
    session.refresh_from_db()
    assert session.last_reason == "Initial state"


def test_a_caller_refused_on_the_locked_row_writes_nothing(session: AgentSession) -> None:
    class Refused(Exception):
        pass

    def refuse(locked: AgentSession) -> None:
        assert locked.pk == session.pk
        raise Refused

    events = AuditEvent.objects.count()
    with pytest.raises(Refused):
        session_transition(session=session.pk, to_role="planner", reason="r", authorize=refuse)
    assert AuditEvent.objects.count() == events
    assert AgentSession.objects.get(pk=session.pk).current_role_id == session.current_role_id
    with pytest.raises(AgentSession.DoesNotExist):
        session_transition(session=uuid.uuid4(), to_role="planner", reason="r")


def prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
def test_hot_statements_are_prepared_once_per_connection(session: AgentSession) -> None:
    def by_title() -> list[str]:
        return [sql for sql in prepared_statements() if '"title" = $1' in sql]

    assert by_title() == []
    for _ in range(3):
        assert fetch_one(AgentSession, session.title, lookup="title") is not None
    assert len(by_title()) == 1  # prepared on first use, reused afterwards
    with statement_cursor() as cursor:  # errors are still Django's
        from django.db import DatabaseError

        with pytest.raises(DatabaseError), transaction.atomic():
            cursor.execute("SELECT no_such_column FROM sessions_app_agentsession")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
def test_acode_db_prepared_off_prepares_nothing(session: AgentSession) -> None:
    options = connection.settings_dict["OPTIONS"]
    saved = options.pop("prepare_threshold", None)
    try:
        before = prepared_statements()
        assert fetch_one(AgentSession, session.task, lookup="task") is not None
        assert prepared_statements() == before
    finally:
        if saved is not None:
            options["prepare_threshold"] = saved
