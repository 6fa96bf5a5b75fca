"""Dashboard pages as a user sees them: what is shown, what may be done, what is refused."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from sessions_app import services
from sessions_app.models import AgentSession, AuditEvent, RoleTransition

pytestmark = pytest.mark.django_db


@pytest.fixture
def lead(django_user_model: Any) -> User:
    return django_user_model.objects.create_superuser("lead", "lead@example.com", "pw-lead-123")


@pytest.fixture
def lead_client(client: Client, lead: User) -> Client:
    client.force_login(lead)
    return client


@pytest.fixture
def dev_client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def session(user: User) -> AgentSession:
    return services.session_create(owner=user, title="Add JWT authentication", task="JWT")


def buttons(html: str) -> list[str]:
    return re.findall(r'data-transition="([^"]+)"', html)


@pytest.mark.parametrize("url", ["/", "/roles/", "/audit/", "/usage/", "/audit/chain/"])
def test_pages_need_a_login(client: Client, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_login_page_is_styled_and_logs_in(client: Client, user: User) -> None:
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert b"Log in to acode" in page.content
    assert b"/static/acode.css" in page.content
    response = client.post("/accounts/login/", {"username": "dev", "password": "pw-dev-123"})
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_board_groups_cards_by_role_and_connects_live(
    lead_client: Client, session: AgentSession
) -> None:
    html = lead_client.get("/").content.decode()
    assert 'id="board-columns"' in html
    for slug in ("default", "planner", "coder", "reviewer", "explorer", "tester"):
        assert f'id="col-{slug}"' in html
    default_column = html.split('id="col-default"')[1].split("</section>")[0]
    assert f'id="card-{session.id}"' in default_column
    assert "Initial state" in default_column
    assert 'ws-connect="/ws/board/"' in html
    assert "/static/vendor/htmx.min.js" in html
    assert "/static/vendor/htmx-ext-ws.min.js" in html


def test_board_filters_by_text_and_role_and_carries_them_to_the_socket(
    lead_client: Client, session: AgentSession, user: User
) -> None:
    services.session_create(owner=user, title="Fix flaky payment test")
    html = lead_client.get("/", {"q": "flaky"}).content.decode()
    assert "Fix flaky payment test" in html
    assert "Add JWT authentication" not in html
    assert 'ws-connect="/ws/board/?q=flaky"' in html
    only_planner = lead_client.get("/", {"role": "Planner"}).content.decode()
    assert 'id="col-planner"' in only_planner
    assert 'id="col-default"' not in only_planner


def test_board_shows_only_own_sessions_to_a_developer(
    dev_client: Client, session: AgentSession, lead: User
) -> None:
    services.session_create(owner=lead, title="The lead's own session")
    html = dev_client.get("/").content.decode()
    assert "Add JWT authentication" in html
    assert "The lead&#x27;s own session" not in html
    assert "own session" not in html


def test_session_page_offers_only_transitions_allowed_now(
    dev_client: Client, session: AgentSession
) -> None:
    html = dev_client.get(f"/sessions/{session.id}/").content.decode()
    assert 'id="session-header"' in html
    assert 'data-role="default"' in html
    assert sorted(buttons(html)) == ["explorer", "planner", "tester"]
    assert "the session has no plan yet" in html  # Coder is listed as blocked, not a button
    assert 'name="reason"' in html and "required" in html
    for fragment in ("transitions", "timeline", "plan", "jobs", "changes", "time"):
        assert f'id="session-{fragment}"' in html
    assert f'ws-connect="/ws/sessions/{session.id}/"' in html


def test_session_page_colours_diff_lines_and_shows_plan_status(
    dev_client: Client, session: AgentSession, user: User
) -> None:
    services.plan_set(
        session=session,
        steps=[{"title": "Model", "status": "done"}, {"title": "Views"}],
        user=user,
    )
    services.change_record(
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
    services.session_transition(session=session, to_role="planner", reason="elsewhere", user=user)
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


def test_roles_page_shows_specs_tool_matrix_and_rules(lead_client: Client) -> None:
    html = lead_client.get("/roles/").content.decode()
    assert "Task decomposition and planning" in html
    assert "Cannot modify files (read-only access)" in html
    assert "roles/planner" in html
    assert "Change-focused" in html
    assert "80000 tokens" in html
    matrix = html.split('id="tool-matrix"')[1].split("</table>")[0]
    write_row = matrix.split("<code>write_file</code>")[1].split("</tr>")[0]
    assert "needs <code>write_files</code>" in write_row  # withheld from Planner, with the why
    rules = html.split('id="transition-rules"')[1]
    assert "when the session has a plan" in rules
    assert "built in" in rules


def test_audit_page_filters_paginates_and_exports_with_the_same_filters(
    lead_client: Client, session: AgentSession, user: User
) -> None:
    for i in range(60):
        services.session_update(session=session, data={"title": f"Title {i}"}, user=user)
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


def test_audit_chain_status_is_shown(lead_client: Client, session: AgentSession) -> None:
    html = lead_client.get("/audit/chain/").content.decode()
    assert 'id="chain-slot"' in html
    assert "Chain intact" in html


def test_usage_page_draws_an_svg_against_the_targets(
    lead_client: Client, session: AgentSession, user: User
) -> None:
    services.session_transition(session=session, to_role="planner", reason="plan", user=user)
    html = lead_client.get("/usage/").content.decode()
    assert "<svg" in html and 'class="band"' in html
    for target in ("15\u201320%", "60\u201370%", "10\u201315%"):
        assert target in html
