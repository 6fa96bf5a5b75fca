"""The usage page: time in role of the sessions the user sees, against the spec's targets."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from sessions_app.models import AgentSession
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition

pytestmark = pytest.mark.django_db


def test_usage_page_draws_an_svg_against_the_targets(
    lead_client: Client, session: AgentSession, user: User
) -> None:
    session_transition(session=session, to_role="planner", reason="plan", user=user)
    html = lead_client.get("/usage/").content.decode()
    assert "<svg" in html and 'class="band"' in html
    for target in ("15\u201320%", "60\u201370%", "10\u201315%"):
        assert target in html


def test_usage_page_counts_only_the_users_own_sessions(dev_client: Client, lead: User) -> None:
    html = dev_client.get("/usage/").content.decode()
    assert "your sessions" in html
    assert "No time recorded yet" in html
    session_create(owner=lead, title="The lead's")
    assert "No time recorded yet" in dev_client.get("/usage/").content.decode()
