"""Time a run waits for a person is shown as waiting, not as time in the role; the risk
badge shows the run's tier; the Run form starts with the session's task."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import AgentSession, RunStatus
from sessions_app.selectors.time_in_role import time_in_roles, waiting_intervals
from sessions_app.services.runs import run_answer, run_start
from tests.sessions_app.dashboard.test_runs import (
    high_run_at_gate,
    page,
    panel,
    script_question,
    section,
)
from tests.sessions_app.runkit import drive, grant_approve, other_reviewer

pytestmark = pytest.mark.django_db


def clock_at(monkeypatch: pytest.MonkeyPatch, moment: datetime) -> None:
    monkeypatch.setattr(timezone, "now", lambda: moment)


def share(html: str, name: str) -> str:
    """The duration the Time in role panel shows for ``name``."""
    found = re.search(rf'</span>{re.escape(name)} <span class="muted">([^<]+) · ', html)
    assert found, html
    return found.group(1)


def test_waiting_at_the_gate_is_waiting_not_reviewer_time(
    dev_client: Client, session: AgentSession, user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = high_run_at_gate(session, grant_approve(user))
    clock_at(monkeypatch, timezone.now() + timedelta(hours=1))

    html = page(dev_client, session)
    header = section(html, "session-header")
    assert 'data-role="reviewer"' in header
    assert 'data-waiting="approval"' in header
    assert re.search(r"Waiting for approval for <time [^>]*>1h 00m</time>", header), header
    in_role = re.search(r'<span class="in-role">([^<]+)</span>', header)
    assert in_role and in_role.group(1).endswith("s"), header  # seconds, not an hour
    assert "(and 1h 00m waiting for a person, not counted)" in header
    time_panel = section(html, "session-time")
    assert share(time_panel, "Waiting for a person") == "1h 00m"
    assert share(time_panel, "Reviewer").endswith("s")

    usage = APIClient()
    usage.force_authenticate(user)
    stats = usage.get(f"/api/sessions/{session.id}/stats/").json()
    assert 3590 < stats["waiting_seconds"] < 3700
    reviewer = next(r for r in stats["roles"] if r["role"] == "reviewer")
    assert reviewer["seconds"] < 60
    assert run.status == RunStatus.AWAITING_APPROVAL


def test_the_risk_badge_shows_the_runs_tier_not_the_sessions(
    dev_client: Client, session: AgentSession, user: User
) -> None:
    header = section(page(dev_client, session), "session-header")
    assert 'data-risk="low"' in header and ">Low risk<" in header
    other_reviewer()
    run = run_start(session=session, request="Store the password hash", user=user)
    assert (run.declared_tier, run.effective_tier) == ("low", "high")  # a risk signal
    session.refresh_from_db()
    assert session.risk_tier == "low"
    header = section(page(dev_client, session), "session-header")
    assert 'data-risk="high"' in header and ">High risk<" in header


def test_a_stage_waiting_for_an_answer_counts_the_wait_apart(
    dev_client: Client, session: AgentSession, user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    script_question()
    run = drive(run_start(session=session, request="Add a greeting helper", user=user))
    assert run.status == RunStatus.AWAITING_INPUT
    clock_at(monkeypatch, timezone.now() + timedelta(minutes=30))
    waiting = section(page(dev_client, session), "session-header")
    assert 'data-waiting="an answer"' in waiting
    run_answer(run=run, answer="English", user=user)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.message

    html = panel(page(dev_client, session))
    coder = html.split('data-purpose="code" data-status=', 1)[1].split("</li>", 1)[0]
    assert '<span class="run-stage-waited"' in coder and "+ 30m waiting" in coder
    took = re.search(r'<span class="muted run-stage-time">([^<]+)', coder)
    assert took and took.group(1).strip().endswith("s")  # seconds of work, not 30 minutes
    header = section(page(dev_client, session), "session-header")
    assert "data-waiting" not in header  # the run ended: nothing to wait for


def test_time_in_roles_leaves_out_the_waits() -> None:
    t0 = timezone.now()
    rows = [("s", "coder", t0), ("s", "reviewer", t0 + timedelta(minutes=10))]
    waits: dict[Any, Any] = {
        "s": [
            (t0 + timedelta(minutes=2), t0 + timedelta(minutes=5)),  # a question while coding
            (t0 + timedelta(minutes=12), None),  # the gate, still open
        ]
    }
    now = t0 + timedelta(minutes=20)
    assert time_in_roles(rows, now=now, waiting=waits) == {"coder": 420.0, "reviewer": 120.0}
    assert time_in_roles(rows, now=now) == {"coder": 600.0, "reviewer": 600.0}
    assert waiting_intervals([]) == {}


def test_the_run_form_starts_with_the_sessions_task(
    dev_client: Client, session: AgentSession, user: User
) -> None:
    form = panel(page(dev_client, session)).split('id="run-request"', 1)[1]
    assert form.split(">", 1)[1].startswith(f"{session.task}</textarea>")
    script_question()
    run = drive(run_start(session=session, request="Add a greeting helper", user=user))
    run_answer(run=run, answer="English", user=user)
    assert drive(run).status == RunStatus.SUCCEEDED
    # Once a run of the task succeeded, the next one starts empty.
    form = panel(page(dev_client, session)).split('id="run-request"', 1)[1]
    assert form.split(">", 1)[1].startswith("</textarea>")
