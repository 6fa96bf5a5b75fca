"""The session page: what it shows, the transitions it offers, and what a click does."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from sessions_app.models import AgentSession, AuditEvent, JobEventKind, RoleTransition
from sessions_app.services.changes import change_record
from sessions_app.services.jobs import job_create, job_event
from sessions_app.services.plans import plan_set
from sessions_app.services.transitions import session_transition

pytestmark = pytest.mark.django_db


def buttons(html: str) -> list[str]:
    return re.findall(r'data-transition="([^"]+)"', html)


def test_session_page_offers_only_transitions_allowed_now(
    dev_client: Client, session: AgentSession
) -> None:
    html = dev_client.get(f"/sessions/{session.id}/").content.decode()
    assert 'id="session-header"' in html
    assert 'data-role="default"' in html
    assert sorted(buttons(html)) == ["explorer", "planner", "product-manager", "tester"]
    assert "the session has no plan yet" in html  # Coder is listed as blocked, not a button
    assert 'name="reason"' in html and "required" in html
    for fragment in ("transitions", "timeline", "plan", "jobs", "changes", "time"):
        assert f'id="session-{fragment}"' in html
    assert f'ws-connect="/ws/sessions/{session.id}/"' in html


def test_session_page_colours_diff_lines_and_shows_plan_status(
    dev_client: Client, session: AgentSession, user: User
) -> None:
    plan_set(
        session=session,
        steps=[{"title": "Model", "status": "done"}, {"title": "Views"}],
        user=user,
    )
    change_record(
        session=session,
        path="app/views.py",
        kind="modified",
        diff="--- a/app/views.py\n+++ b/app/views.py\n@@ -1,2 +1,2 @@\n-old <b>\n+new\n same",
        user=user,
    )
    html = dev_client.get(f"/sessions/{session.id}/").content.decode()
    assert '<span class="ln ln-del">-old &lt;b&gt;</span>' in html
    assert '<span class="ln ln-add">+new</span>' in html
    assert '<span class="ln ln-hunk">@@ -1,2 +1,2 @@</span>' in html
    assert "1 of 2 done" in html
    assert "step step-done" in html


def test_session_page_shows_the_timeline_and_time_in_role(
    dev_client: Client, session: AgentSession, user: User
) -> None:
    session_transition(session=session, to_role="planner", reason="Start planning", user=user)
    html = dev_client.get(f"/sessions/{session.id}/").content.decode()
    timeline = html.split('id="session-timeline"')[1].split("</section>")[0]
    assert "2 transitions" in timeline
    assert timeline.index("Start planning") < timeline.index("Initial state")  # newest first
    time_panel = html.split('id="session-time"')[1].split("</section>")[0]
    assert "Planner" in time_panel and "Default" in time_panel


def test_session_page_streams_the_newest_jobs_events(
    dev_client: Client, session: AgentSession, user: User
) -> None:
    session_transition(session=session, to_role="planner", reason="plan", user=user)
    job = job_create(session=session, request="Plan the user model", user=user)
    job_event(
        job,
        JobEventKind.TOOL_DENIED,
        {"name": "write_file", "code": "ACODE-ROL-003", "reason": "Planner cannot write"},
    )
    html = dev_client.get(f"/sessions/{session.id}/").content.decode()
    jobs = html.split('id="session-jobs"')[1].split("</section>")[0]
    assert f'data-job="{job.pk}"' in jobs
    assert "Plan the user model" in jobs
    assert "1 denied" in jobs
    denied = jobs.split("tone-denied")[1].split("</li>")[0]
    assert "write_file: ACODE-ROL-003" in denied
    assert "Planner cannot write" in denied


def test_session_page_is_404_for_someone_elses_session(
    client: Client, session: AgentSession, django_user_model: Any
) -> None:
    other = django_user_model.objects.create_user("other", "o@example.com", "pw-other-123")
    client.force_login(other)
    assert client.get(f"/sessions/{session.id}/").status_code == 404
    response = client.post(
        f"/sessions/{session.id}/transition/", {"to_role": "planner", "reason": "sneaky"}
    )
    assert response.status_code == 404
    assert RoleTransition.objects.filter(session=session).count() == 1


def test_transition_form_changes_the_role_through_the_service(
    dev_client: Client, session: AgentSession
) -> None:
    response = dev_client.post(
        f"/sessions/{session.id}/transition/",
        {
            "to_role": "planner",
            "reason": "Starting feature implementation",
            "expected_role": "default",
        },
        follow=True,
    )
    assert response.status_code == 200
    session.refresh_from_db()
    assert session.current_role.slug == "planner"
    assert session.last_reason == "Starting feature implementation"
    html = response.content.decode()
    assert "Role transition: Default → Planner" in html
    assert 'data-role="planner"' in html
    assert AuditEvent.objects.filter(event_type="RoleTransition", session=session).exists()


def test_transition_without_a_role_is_refused(dev_client: Client, session: AgentSession) -> None:
    response = dev_client.post(
        f"/sessions/{session.id}/transition/", {"reason": "somewhere"}, follow=True
    )
    assert "ACODE-API-400" in response.content.decode()
    session.refresh_from_db()
    assert session.current_role.slug == "default"


def test_refused_transition_shows_the_acode_code(dev_client: Client, session: AgentSession) -> None:
    response = dev_client.post(
        f"/sessions/{session.id}/transition/",
        {"to_role": "coder", "reason": "skip planning"},
        follow=True,
    )
    html = response.content.decode()
    assert '<code class="message-code">ACODE-ROL-002</code>' in html
    assert "Preconditions not met" in html
    session.refresh_from_db()
    assert session.current_role.slug == "default"
    assert AuditEvent.objects.filter(event_type="TransitionDenied", session=session).exists()


def test_blank_reason_is_refused_with_its_code(dev_client: Client, session: AgentSession) -> None:
    response = dev_client.post(
        f"/sessions/{session.id}/transition/", {"to_role": "planner", "reason": "  "}, follow=True
    )
    assert "ACODE-ROL-007" in response.content.decode()


def test_stale_page_is_refused_with_expected_role_mismatch(
    dev_client: Client, session: AgentSession, user: User
) -> None:
    session_transition(session=session, to_role="planner", reason="elsewhere", user=user)
    response = dev_client.post(
        f"/sessions/{session.id}/transition/",
        {"to_role": "explorer", "reason": "from an old page", "expected_role": "default"},
        follow=True,
    )
    assert "ACODE-ROL-006" in response.content.decode()


def test_follower_sees_no_buttons_and_cannot_post(
    client: Client, session: AgentSession, django_user_model: Any
) -> None:
    viewer = django_user_model.objects.create_user("viewer", "v@example.com", "pw-viewer-123")
    viewer.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    client.force_login(viewer)
    html = client.get(f"/sessions/{session.id}/").content.decode()
    assert buttons(html) == []
    assert 'name="reason"' not in html
    response = client.post(
        f"/sessions/{session.id}/transition/",
        {"to_role": "planner", "reason": "not mine"},
        follow=True,
    )
    assert "ACODE-API-403" in response.content.decode()
    session.refresh_from_db()
    assert session.current_role.slug == "default"
