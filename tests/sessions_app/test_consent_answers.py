"""Answering a call a rule put to a person, from the session page and the API: who may,
once only, not after its time; each answer audited (no worker: the pending call is made
as the executor makes it)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from roles.models import Role
from sessions_app.models import AgentSession, AuditEvent, Job, ToolConsent
from sessions_app.services.consents import tool_consent_ask
from sessions_app.services.sessions import session_create

pytestmark = pytest.mark.django_db


def _asked(session: AgentSession, **fields: Any) -> ToolConsent:
    job = Job.objects.create(session=session, role=Role.objects.get(slug="tester"), request="t",
                             created_by="dev", status="running")  # fmt: skip
    consent = tool_consent_ask(
        session=session, job=job, role="tester", tool="execute_command", target="rm build/x",
        rule="command_rules[0]: rm", reason="needs a person", arguments={"argv": ["rm", "build/x"]},
        asked_audit_id=None,
    )  # fmt: skip
    if fields:
        ToolConsent.objects.filter(pk=consent.pk).update(**fields)
        consent.refresh_from_db()
    return consent


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_owner_allows_a_call_from_the_session_page(user: Any) -> None:
    session = session_create(owner=user, title="t", task="t")
    consent = _asked(session)
    page = _client(user).get(f"/sessions/{session.pk}/").content.decode()
    assert "Allow this call" in page and "rm build/x" in page
    response = _client(user).post(
        f"/sessions/{session.pk}/consents/{consent.pk}/", {"allow": "yes", "note": "fine"},
        follow=True,
    )  # fmt: skip
    assert "The call was allowed." in response.content.decode()
    consent.refresh_from_db()
    assert (consent.status, consent.answered_by_name, consent.note) == ("allowed", "dev", "fine")
    row = AuditEvent.objects.get(event_type="ToolConsent", session=session)
    assert (row.actor, row.result, row.details["phase"]) == ("dev", "allowed", "answered")
    again = _client(user).post(f"/sessions/{session.pk}/consents/{consent.pk}/", {"allow": "no"},
                               follow=True)  # fmt: skip
    assert "no longer waiting for an answer" in again.content.decode()


def test_who_may_answer_is_who_may_act_on_the_session(user: Any, django_user_model: Any) -> None:
    session = session_create(owner=user, title="t", task="t")
    consent = _asked(session)
    url = f"/api/sessions/{session.pk}/consents/{consent.pk}/"
    viewer = django_user_model.objects.create_user("viewer", password="pw-viewer-1")
    viewer.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    lead = django_user_model.objects.create_user("lead", password="pw-lead-1")
    lead.user_permissions.add(Permission.objects.get(codename="act_on_all_sessions"))
    page = _client(viewer).get(f"/sessions/{session.pk}/").content.decode()
    assert "rm build/x" in page and "Allow this call" not in page  # seen, not answered
    api = APIClient()
    api.force_authenticate(viewer)
    assert api.post(url, {"allow": True}, format="json").status_code == 403
    api.force_authenticate(lead)
    response = api.post(url, {"allow": False, "note": "not today"}, format="json")
    assert response.status_code == 200 and response.json()["answered_by"] == "lead"
    assert ToolConsent.objects.get(pk=consent.pk).status == "denied"


def test_a_call_past_its_time_cannot_be_allowed_and_is_closed_as_timed_out(user: Any) -> None:
    session = session_create(owner=user, title="t", task="t")
    consent = _asked(session, expires_at=timezone.now() - timedelta(seconds=1))
    api = APIClient()
    api.force_authenticate(user)
    response = api.post(
        f"/api/sessions/{session.pk}/consents/{consent.pk}/", {"allow": True}, format="json"
    )
    assert response.status_code == 409 and response.json()["code"] == "ACODE-TOL-009"
    assert ToolConsent.objects.get(pk=consent.pk).status == "timed_out"
    row = AuditEvent.objects.get(event_type="ToolConsent", session=session)
    assert (row.result, row.details["phase"]) == ("ACODE-TOL-008", "timed_out")
