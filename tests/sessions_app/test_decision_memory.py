"""Decision memory (issue 41): a person's answer to an ask is remembered for its scope
(the session, the role that asked, the exact call), reused there as "answered before by",
and asked of a person again once an admin revokes it (no worker: asks are made as the
executor makes them; tests/sessions_app/test_decision_memory_worker.py runs one)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from roles.models import Role
from sessions_app.agent.tool_context import _ask as ask_question
from sessions_app.models import (
    AgentSession,
    AuditEvent,
    Job,
    RememberedAnswer,
    Run,
    RunQuestion,
    RunStage,
    ToolConsent,
    WorkflowTemplate,
)
from sessions_app.services.consents import tool_consent_answer, tool_consent_ask
from sessions_app.services.sessions import session_create

pytestmark = pytest.mark.django_db


def _ask(
    session: AgentSession, *, role: str = "tester", argv: tuple[str, ...] = ("rm", "x")
) -> ToolConsent:
    job = Job.objects.create(session=session, role=Role.objects.get(slug=role), request="t",
                             created_by="dev", status="running")  # fmt: skip
    return tool_consent_ask(
        session=session, job=job, role=role, tool="execute_command", target=" ".join(argv),
        rule="command_rules[0]: rm", reason="needs a person", arguments={"argv": list(argv)},
        asked_audit_id=None,
    )  # fmt: skip


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_an_answer_is_reused_for_the_same_call_in_its_scope_only(user: Any) -> None:
    session = session_create(owner=user, title="t", task="t")
    first = _ask(session)
    tool_consent_answer(consent_id=first.pk, session=session, user=user, allow=False,
                        note="never in this repo")  # fmt: skip
    again = _ask(session)
    again.refresh_from_db()
    assert again.status == "denied" and again.remembered is not None
    assert again.answered_by_name == "dev"
    assert again.note == "answered before by dev: never in this repo"
    row = AuditEvent.objects.filter(session=session, event_type="ToolConsent").last()
    assert row is not None and row.details["remembered"] == again.remembered.pk
    # Another call, another role or another session: a person is asked.
    assert _ask(session, argv=("rm", "y")).status == "pending"
    assert _ask(session, role="coder").status == "pending"
    other = session_create(owner=user, title="u", task="u")
    assert _ask(other).status == "pending"
    listed = _api(user).get(f"/api/sessions/{session.pk}/remembered-answers/").json()
    assert [(a["target"], a["allowed"], a["answered_by"], a["reuses"]) for a in listed] == [
        ("rm x", False, "dev", 1)
    ]
    shown = _api(user).get(f"/api/sessions/{session.pk}/consents/").json()
    assert any(c["answered_before"] == again.remembered.pk for c in shown)


def test_only_an_admin_revokes_and_then_a_person_is_asked_again(
    user: Any, django_user_model: Any, admin_user: Any
) -> None:
    session = session_create(owner=user, title="t", task="t")
    first = _ask(session)
    tool_consent_answer(consent_id=first.pk, session=session, user=user, allow=True)
    answer = RememberedAnswer.objects.get(session=session)
    url = f"/api/remembered-answers/{answer.pk}/revoke/"
    refused = _api(user).post(url)  # the owner answered it, but revoking is an admin's
    assert refused.status_code == 403 and refused.json()["code"] == "ACODE-TOL-010"
    stranger = django_user_model.objects.create_user("stranger", password="pw-stranger-1")
    stranger.user_permissions.add(Permission.objects.get(codename="revoke_rememberedanswer"))
    assert _api(stranger).post(url).status_code == 404  # may revoke, may not see the session
    assert _ask(session).status == "allowed"
    revoked = _api(admin_user).post(url)
    assert revoked.status_code == 200 and revoked.json()["revoked_by"] == "boss"
    assert _ask(session).status == "pending"
    row = AuditEvent.objects.get(session=session, details__phase="memory_revoked")
    assert (row.actor, row.result) == ("boss", "revoked")


def test_admin_revokes_from_the_admin_list(user: Any, admin_client_logged_in: Any) -> None:
    session = session_create(owner=user, title="t", task="t")
    first = _ask(session)
    tool_consent_answer(consent_id=first.pk, session=session, user=user, allow=True)
    answer = RememberedAnswer.objects.get(session=session)
    page = admin_client_logged_in.get("/admin/sessions_app/rememberedanswer/").content.decode()
    assert "rm x" in page and "Revoke" in page
    response = admin_client_logged_in.post(
        "/admin/sessions_app/rememberedanswer/",
        {"action": "revoke", "_selected_action": [answer.pk]},
        follow=True,
    )
    assert "Revoked 1 remembered answer" in response.content.decode()
    answer.refresh_from_db()
    assert answer.revoked_by_name == "boss"


def test_a_question_answered_once_is_answered_again_without_pausing(user: Any) -> None:
    session = session_create(owner=user, title="t", task="t")
    template = WorkflowTemplate.objects.create(slug="q", name="Q", risk_tier="low")
    run = Run.objects.create(session=session, template=template, request="r",
                             declared_tier="low", effective_tier="low", max_llm_calls=9,
                             max_tokens=9, max_seconds=9, created_by="dev")  # fmt: skip
    stage = RunStage.objects.create(run=run, seq=1, position=0, purpose="plan",
                                    role=Role.objects.get(slug="planner"))  # fmt: skip
    job = Job.objects.create(session=session, role=Role.objects.get(slug="planner"),
                             request="t", created_by="dev", run_stage=stage)  # fmt: skip
    asked: list[str] = []
    assert ask_question(job, session, asked, "Which database?") is None and asked == [
        "Which database?"
    ]
    question = RunQuestion.objects.get(run=run)
    question.answer, question.answered_by = "PostgreSQL", user
    question.answered_at = question.asked_at
    question.save()  # as run_answer saves it
    again = ask_question(job, session, asked, "Which  database?")
    assert again == "A person (answered before by dev): PostgreSQL" and len(asked) == 1
    assert RunQuestion.objects.filter(run=run).count() == 1  # nobody was asked again
    coder_job = Job.objects.create(session=session, role=Role.objects.get(slug="coder"),
                                   request="t", created_by="dev", run_stage=stage)  # fmt: skip
    assert ask_question(coder_job, session, asked, "Which database?") is None  # another role asks
    listed = _api(user).get(f"/api/sessions/{session.pk}/remembered-answers/").json()
    assert [(a["question"], a["note"], a["allowed"]) for a in listed] == [
        ("Which database?", "PostgreSQL", None)
    ]
