"""The board: cards by current role, filtered, only the sessions the user may see."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from sessions_app.models import AgentSession, SessionStatus
from sessions_app.services.sessions import session_create, session_update

pytestmark = pytest.mark.django_db


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
    session_create(owner=user, title="Fix flaky payment test")
    html = lead_client.get("/", {"q": "flaky"}).content.decode()
    assert "Fix flaky payment test" in html
    assert "Add JWT authentication" not in html
    assert 'ws-connect="/ws/board/?q=flaky"' in html
    only_planner = lead_client.get("/", {"role": "Planner"}).content.decode()
    assert 'id="col-planner"' in only_planner
    assert 'id="col-default"' not in only_planner


def test_board_filters_by_owner_and_status(
    lead_client: Client, session: AgentSession, lead: User
) -> None:
    session_create(owner=lead, title="The lead's own session")
    mine = lead_client.get("/", {"owner": "lead"}).content.decode()
    assert "own session" in mine
    assert "Add JWT authentication" not in mine
    session_update(session=session, data={"status": SessionStatus.PAUSED}, user=lead)
    paused = lead_client.get("/", {"status": SessionStatus.PAUSED}).content.decode()
    assert "Add JWT authentication" in paused
    assert "own session" not in paused
    assert f'ws-connect="/ws/board/?status={SessionStatus.PAUSED}"' in paused


def test_board_ignores_an_unknown_status(lead_client: Client, session: AgentSession) -> None:
    html = lead_client.get("/", {"status": "exploded"}).content.decode()
    assert "Add JWT authentication" in html
    assert 'ws-connect="/ws/board/"' in html


def test_board_shows_only_own_sessions_to_a_developer(
    dev_client: Client, session: AgentSession, lead: User
) -> None:
    session_create(owner=lead, title="The lead's own session")
    html = dev_client.get("/").content.decode()
    assert "Add JWT authentication" in html
    assert "own session" not in html
    assert '<option value="lead"' not in html  # nor their owner in the owner filter
