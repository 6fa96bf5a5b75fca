"""The audit log: one hash chain per session, anchors over every chain, and verification that
names the first bad row after an edit, a deletion or a reordering anywhere."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from sessions_app.models import AgentSession, AuditAnchor, AuditChain, AuditEvent, AuditEventType
from sessions_app.services import audit as audit_service
from sessions_app.services.audit import audit_anchor, audit_record
from sessions_app.services.audit_verify import audit_verify
from sessions_app.services.locks import lock_session
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition
from tests.conftest import RUN_ON_POSTGRES

pytestmark = pytest.mark.django_db


def _raw(sql: str, params: list[Any]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql.format(event=AuditEvent._meta.db_table), params)


def _busy_session(user: Any, title: str, moves: int = 4) -> Any:
    session = session_create(owner=user, title=title)
    for i in range(moves):
        session_transition(
            session=session,
            to_role="planner" if i % 2 == 0 else "default",
            reason=f"m{i}",
            user=user,
        )
    return session


def _chain(session: Any) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(session=session).order_by("seq"))


def test_each_session_has_its_own_chain_and_all_of_them_verify(user: Any) -> None:
    first, second = _busy_session(user, "A"), _busy_session(user, "B")
    audit_record(event_type=AuditEventType.ROLE_EDITED, actor="admin", target="coder")
    for session in (first, second):
        events = _chain(session)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert {e.chain for e in events} == {f"session:{session.pk}"}
        assert events[0].prev_hash == "0" * 64
    report = audit_verify()
    assert report.ok, report.as_dict()
    assert report.checked == AuditEvent.objects.count()


def test_an_edited_row_is_named(user: Any) -> None:
    session = _busy_session(user, "Edited")
    _busy_session(user, "Untouched")
    target = _chain(session)[2]
    _raw("UPDATE {event} SET actor = %s WHERE id = %s", ["mallory", target.pk])
    report = audit_verify()
    assert not report.ok
    assert (report.first_bad_id, report.first_bad_seq) == (target.pk, target.seq)
    assert report.chain == f"session:{session.pk}" and "altered" in report.problem


def test_a_deleted_row_is_named_by_the_row_after_the_gap(user: Any) -> None:
    session = _busy_session(user, "Gap")
    events = _chain(session)
    _raw("DELETE FROM {event} WHERE id = %s", [events[1].pk])
    report = audit_verify()
    assert not report.ok and report.first_bad_id == events[2].pk
    assert "missing" in report.problem


def test_reordered_rows_are_detected(user: Any) -> None:
    session = _busy_session(user, "Swapped")
    a, b = _chain(session)[1:3]
    # Swap the two rows' positions (through a free number: (chain, seq) is unique).
    _raw("UPDATE {event} SET seq = 999999 WHERE id = %s", [a.pk])
    _raw("UPDATE {event} SET seq = %s WHERE id = %s", [a.seq, b.pk])
    _raw("UPDATE {event} SET seq = %s WHERE id = %s", [b.seq, a.pk])
    report = audit_verify()
    assert not report.ok and report.first_bad_id in (a.pk, b.pk)


def test_removing_the_newest_events_is_detected_by_the_head(user: Any) -> None:
    session = _busy_session(user, "Tail")
    last = _chain(session)[-1]
    _raw("DELETE FROM {event} WHERE id = %s", [last.pk])
    report = audit_verify()
    assert not report.ok and "removed" in report.problem


def test_an_anchor_catches_a_tail_removed_together_with_its_head(user: Any) -> None:
    session = _busy_session(user, "Rewound")
    anchor = audit_anchor()
    assert anchor is not None and f"session:{session.pk}" in anchor.heads
    assert audit_anchor() is None, "nothing moved since: no new anchor"
    events = _chain(session)
    keep = events[-3]
    _raw("DELETE FROM {event} WHERE id IN (%s, %s)", [events[-1].pk, events[-2].pk])
    # Rewind the chain's head, on the session's row, to the event now last.
    AgentSession.objects.filter(pk=session.pk).update(audit_seq=keep.seq, audit_hash=keep.hash)
    report = audit_verify()
    assert not report.ok and "anchor #1" in report.problem


def test_an_anchor_marks_every_chain_sealed_in_batches(user: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(audit_service, "ANCHOR_BATCH", 2)
    sessions = [_busy_session(user, f"Batch {i}", moves=i) for i in range(5)]
    audit_record(event_type=AuditEventType.ROLE_EDITED, actor="admin", target="global")
    anchor = audit_anchor()
    assert anchor is not None
    for session in sessions:
        session.refresh_from_db()
        assert session.audit_anchored_seq == session.audit_seq == len(_chain(session))
        assert anchor.heads[f"session:{session.pk}"][0] == session.audit_seq
    assert AuditChain.objects.get(pk="global").anchored_seq == anchor.heads["global"][0]
    assert audit_anchor() is None


def test_an_edited_anchor_is_detected(user: Any) -> None:
    _busy_session(user, "Anchored")
    anchor = audit_anchor()
    assert anchor is not None
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {AuditAnchor._meta.db_table} SET heads = %s WHERE id = %s", ["{}", anchor.pk]
        )
    report = audit_verify()
    assert not report.ok and "anchor" in report.problem


def test_text_unsafe_for_storage_is_audited_and_verifies(user: Any) -> None:
    session = session_create(owner=user, title="Odd text")
    event = audit_record(
        event_type=AuditEventType.TOOL_DENIED,
        actor="agent",
        session=session,
        target="a\x00b\ud800c",
        details={"argv": ["x\x00", "\udcff"], "n": 1},
    )
    stored = AuditEvent.objects.get(pk=event.pk)
    assert stored.target == "a\ufffdb\ufffdc"
    assert stored.details == {"argv": ["x\ufffd", "\ufffd"], "n": 1}
    assert audit_verify().ok


def test_the_chain_head_lives_on_the_session_row_and_a_stale_copy_never_rewinds_it(
    user: Any,
) -> None:
    session = _busy_session(user, "Head")
    stale = AgentSession.objects.get(pk=session.pk)  # read before the next audited write
    session_transition(session=session, to_role="planner", reason="again", user=user)
    newest = _chain(session)[-1]
    stale.title = "Renamed from an old copy"
    stale.save()  # every field but the audit head
    row = AgentSession.objects.get(pk=session.pk)
    assert row.title == "Renamed from an old copy"
    assert (row.audit_seq, row.audit_hash) == (newest.seq, newest.hash)
    audit_record(event_type=AuditEventType.SESSION_UPDATED, actor="dev", session=stale)
    assert audit_verify().ok


def test_appends_inside_a_held_lock_use_the_locked_row_and_lock_nothing_again(
    user: Any,
) -> None:
    session = _busy_session(user, "Held")
    stale = AgentSession.objects.get(pk=session.pk)
    with CaptureQueriesContext(connection) as queries, lock_session(session.pk) as locked:
        audit_record(event_type=AuditEventType.SESSION_UPDATED, actor="dev", session=locked)
        # A copy read before the lock is not trusted: the held row is the head.
        audit_record(event_type=AuditEventType.SESSION_UPDATED, actor="dev", session=stale)
    locks = [q["sql"] for q in queries.captured_queries if "FOR UPDATE" in q["sql"]]
    assert len(locks) <= 1  # the one lock_session (SQLite has no FOR UPDATE)
    row = AgentSession.objects.get(pk=session.pk)
    assert row.audit_seq == locked.audit_seq == stale.audit_seq
    assert audit_verify().ok


@pytest.mark.django_db(transaction=True)
def test_writers_to_different_sessions_do_not_wait_for_each_other(user: Any) -> None:
    if connection.vendor != "postgresql":
        pytest.skip(f"SQLite has one writer at a time by design; {RUN_ON_POSTGRES}")
    first = session_create(owner=user, title="Held")
    second = session_create(owner=user, title="Free")
    holding, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hold_first_chain() -> None:
        try:
            with transaction.atomic():
                audit_record(event_type=AuditEventType.JOB_EVENT, actor="a", session=first)
                holding.set()
                release.wait(10)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=hold_first_chain)
    thread.start()
    assert holding.wait(10)
    try:
        done = threading.Event()

        def write_second() -> None:
            try:
                audit_record(event_type=AuditEventType.JOB_EVENT, actor="b", session=second)
                done.set()
            finally:
                connections.close_all()

        writer = threading.Thread(target=write_second)
        writer.start()
        assert done.wait(5), "a write to another session waited for the first one's lock"
        writer.join()
    finally:
        release.set()
        thread.join()
    assert not errors
    assert audit_verify().ok
