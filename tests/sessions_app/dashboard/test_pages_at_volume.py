"""What the board and the audit page show when there is more than they list: the newest
cards of each column and a count of the rest; past the audit page's count limit, the
newest events and "more than"."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from sessions_app.dashboard import audit as audit_page
from sessions_app.dashboard import board as board_page
from sessions_app.models import AgentSession
from sessions_app.services.sessions import session_create, session_update
from sessions_app.services.transitions import session_transition

pytestmark = pytest.mark.django_db


def test_board_column_shows_its_newest_cards_and_counts_the_rest(
    lead_client: Client, user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(board_page, "COLUMN_LIMIT", 2)
    opened = [session_create(owner=user, title=f"Session {n}") for n in range(4)]
    session_transition(session=opened[0], to_role="planner", reason="Plan it", user=user)
    html = lead_client.get("/").content.decode()
    default = html.split('id="col-default"')[1].split("</section>")[0]
    # Default holds sessions 1-3: the two that entered it last are shown, one is counted.
    assert "Session 3" in default and "Session 2" in default and "Session 1" not in default
    assert "and 1 more" in default
    planner = html.split('id="col-planner"')[1].split("</section>")[0]
    assert "Session 0" in planner and "more</a>" not in planner


def test_audit_page_past_its_count_limit_says_more_than_and_lists_the_newest(
    lead_client: Client, session: AgentSession, user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_page, "AUDIT_COUNT_LIMIT", 5)
    for i in range(8):
        session_update(session=session, data={"title": f"Title {i}"}, user=user)
    html = lead_client.get("/audit/", {"session": str(session.id)}).content.decode()
    assert "More than 5 events match the filters" in html
    rows = html.split("<tbody>")[1].split("</tbody>")[0]
    assert rows.count("<tr") == 5 == rows.count('class="audit-SessionUpdated"')
    assert "SessionCreated" not in rows  # the oldest of the nine is past the newest five
    monkeypatch.setattr(audit_page, "AUDIT_COUNT_LIMIT", 100)
    html = lead_client.get("/audit/", {"session": str(session.id)}).content.decode()
    assert "9 events match the filters" in html
