"""The audit log page: filters shared with the export, who sees which rows, and the chain
check, which only those who may verify can run."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client

from sessions_app.models import AgentSession, AuditEvent, AuditVerification
from sessions_app.services.sessions import session_create, session_update
from sessions_app.tasks import audit_verify_task

pytestmark = pytest.mark.django_db


def test_audit_page_filters_paginates_and_exports_with_the_same_filters(
    lead_client: Client, session: AgentSession, user: User
) -> None:
    for i in range(60):
        session_update(session=session, data={"title": f"Title {i}"}, user=user)
    html = lead_client.get("/audit/", {"event_type": "SessionUpdated"}).content.decode()
    assert "60 events match" in html
    assert "Page 1 of 2" in html
    assert "/api/audit/export/?format=jsonl&amp;event_type=SessionUpdated" in html
    assert "/api/audit/export/?format=csv&amp;event_type=SessionUpdated" in html
    assert "?event_type=SessionUpdated&amp;page=2" in html
    page2 = lead_client.get("/audit/", {"event_type": "SessionUpdated", "page": 2})
    assert "Page 2 of 2" in page2.content.decode()
    export = lead_client.get(
        "/api/audit/export/", {"format": "jsonl", "event_type": "SessionUpdated"}
    )
    assert export.status_code == 200
    assert len(b"".join(export.streaming_content).splitlines()) == 60


def test_audit_page_lists_newest_first_with_chain_and_seq(
    lead_client: Client, session: AgentSession, user: User
) -> None:
    session_update(session=session, data={"title": "Renamed"}, user=user)
    updated = AuditEvent.objects.get(session=session, event_type="SessionUpdated")
    html = lead_client.get("/audit/", {"session": str(session.id)}).content.decode()
    rows = html.split("<tbody>")[1].split("</tbody>")[0]
    assert rows.index("SessionUpdated") < rows.index("SessionCreated")
    assert f'title="session:{session.id}, event {updated.seq} of its chain' in rows
    assert f"session #{updated.seq}" in rows and "session #1<" in rows


def test_audit_page_keeps_the_filter_names_and_values(
    lead_client: Client, session: AgentSession
) -> None:
    since = "2024-01-02T03:04"
    html = lead_client.get(
        "/audit/", {"event_type": "SessionCreated", "actor": "dev", "since": since}
    ).content.decode()
    assert '<option value="SessionCreated" selected>' in html
    assert 'name="actor" value="dev"' in html
    assert f'name="since" value="{since}"' in html
    assert "event_type=SessionCreated&amp;actor=dev&amp;since=2024-01-02T03%3A04%3A00" in html
    assert "1 event matches" in html


def test_an_invalid_filter_is_reported_and_left_out(
    lead_client: Client, session: AgentSession
) -> None:
    html = lead_client.get(
        "/audit/", {"session": "not-a-uuid", "event_type": "SessionCreated"}
    ).content.decode()
    assert 'class="message message-error"' in html
    assert "<strong>session</strong>" in html
    assert "1 event matches" in html
    assert '/api/audit/export/?format=csv&amp;event_type=SessionCreated"' in html


def test_developer_sees_only_the_audit_rows_of_own_sessions(
    dev_client: Client, session: AgentSession, lead: User
) -> None:
    theirs = session_create(owner=lead, title="The lead's")
    html = dev_client.get("/audit/").content.decode()
    assert str(session.id)[:8] in html
    assert str(theirs.id)[:8] not in html


def test_only_a_verifier_is_offered_the_chain_check(
    lead_client: Client, dev_client: Client, session: AgentSession
) -> None:
    assert "Verify now" in lead_client.get("/audit/").content.decode()
    html = dev_client.get("/audit/").content.decode()
    assert "Verify now" not in html
    assert "Not verified yet" in html
    assert dev_client.get("/audit/chain/").status_code == 403


def test_everyone_sees_the_last_stored_verification(
    lead_client: Client, dev_client: Client, session: AgentSession, lead: Any
) -> None:
    lead_client.get("/audit/chain/")  # a verifier's "Verify now" stores the outcome
    stored = AuditVerification.objects.get()
    assert stored.ok and stored.actor == lead.username
    html = dev_client.get("/audit/").content.decode()
    assert "Chain intact" in html and f"by {lead.username}" in html
    verify_task = audit_verify_task.run if hasattr(audit_verify_task, "run") else audit_verify_task
    assert verify_task() is True
    assert AuditVerification.objects.count() == 2
    assert AuditVerification.objects.first().actor == "system"


def test_view_auditevent_permission_may_verify(
    client: Client, session: AgentSession, django_user_model: Any
) -> None:
    auditor = django_user_model.objects.create_user("auditor", "a@example.com", "pw-audit-123")
    auditor.user_permissions.add(Permission.objects.get(codename="view_auditevent"))
    client.force_login(auditor)
    assert "Verify now" in client.get("/audit/").content.decode()
    assert "Chain intact" in client.get("/audit/chain/").content.decode()


def test_audit_chain_status_is_shown(lead_client: Client, session: AgentSession) -> None:
    html = lead_client.get("/audit/chain/").content.decode()
    assert 'id="chain-slot"' in html
    assert "Chain intact" in html


def test_an_edited_audit_row_shows_the_chain_broken(
    lead_client: Client, session: AgentSession
) -> None:
    event = AuditEvent.objects.get(session=session, event_type="SessionCreated")
    with connection.cursor() as cursor:
        table = AuditEvent._meta.db_table
        cursor.execute(f"UPDATE {table} SET target = %s WHERE id = %s", ["edited", event.pk])
    html = lead_client.get("/audit/chain/").content.decode()
    assert "Chain broken" in html
    assert f"session:{session.id}" in html


def test_a_time_filter_with_an_extreme_utc_offset_is_compared_in_utc(
    lead_client: Client, session: AgentSession
) -> None:
    response = lead_client.get("/audit/", {"since": "2020-01-01T00:00:00+23:59"})
    assert response.status_code == 200
    assert "SessionCreated" in response.content.decode()
