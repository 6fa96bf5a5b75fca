"""Waiting is visible (issue 34): while a stage's job waits for a worker, the model or a
tool, the run panel, the job card and the run API say what, since when (a counter the
page ticks every second) and the calls so far; a board card whose run failed says why.

The job's moments are written by the services a worker calls (``job_start``,
``job_event``, ``job_record_usage``), in the order the agent loop writes them."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from sessions_app.models import AgentSession, Job, JobEventKind, RunStatus
from sessions_app.services.event_catalog import EventKind, rerenders
from sessions_app.services.jobs import job_event, job_record_usage, job_start
from sessions_app.services.runs import run_start
from tests.sessions_app.dashboard.test_runs import page, panel
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import PLAN_ONE_STEP, calls, drive

pytestmark = pytest.mark.django_db


def waiting_line(html: str) -> str:
    found = re.search(r'<p class="waiting-line" data-waiting-on="([a-z]+)".*?</p>', html, re.S)
    assert found, html
    return found.group(0)


def test_the_run_panel_says_what_its_stage_waits_on_and_for_how_long(
    dev_client: Client, session: AgentSession, user: User
) -> None:
    run = run_start(session=session, request="Add a greeting helper", user=user)
    job = Job.objects.get(session=session)
    queued = waiting_line(panel(page(dev_client, session)))
    assert 'data-waiting-on="worker"' in queued and "a worker to take the job" in queued

    started = job_start(job.pk)
    assert started is not None
    job_event(started, JobEventKind.LLM_REQUEST, {"endpoints": ["demo-planner"], "tools": []})
    html = page(dev_client, session)
    model = waiting_line(panel(html))
    assert "Waiting for the model (endpoint demo-planner) for" in model
    assert re.search(r'<time datetime="[^"]+" data-since="[^"]+" data-precise', model)
    assert ">0 LLM calls<" in model and ">0 tool calls<" in model
    # The job card in the jobs panel says the same.
    assert 'data-waiting-on="model"' in html[html.index('id="session-jobs"') :]
    # The run's time ticks in the browser too (the budget's Time line).
    time_line = re.search(r'data-budget="time">.*?</div>', panel(html), re.S)
    assert time_line and "data-precise" in time_line.group(0)

    job_record_usage(started, tokens_in=300, tokens_out=20, model="m", endpoint="e",
                     provider="scripted")  # fmt: skip
    job_event(started, JobEventKind.LLM_RESPONSE, {"tool_calls": [{"name": "read_file"}]})
    job_event(started, JobEventKind.TOOL_CALL, {"name": "read_file", "arguments": "{}"})
    tool = waiting_line(panel(page(dev_client, session)))
    assert "Waiting for the tool read_file" in tool
    assert '<span data-calls="llm">1 LLM call</span>' in tool
    assert '<span data-calls="tool">1 tool call</span> so far' in tool

    api = APIClient()
    api.force_authenticate(user)
    waiting = api.get(f"/api/runs/{run.pk}/").json()["waiting"]
    assert waiting["what"] == "tool" and waiting["text"] == "the tool read_file"
    assert (waiting["llm_calls"], waiting["tool_calls"]) == (1, 1)
    assert waiting["seconds"] >= 0 and waiting["since"]


def test_every_job_event_re_renders_the_run_panel() -> None:
    """Its counters (LLM calls, tokens) and what it waits on move with each job event."""
    assert "run" in rerenders(EventKind.JOB_EVENT).session_page


def test_a_board_card_says_why_its_run_failed(
    dev_client: Client, session: AgentSession, user: User
) -> None:
    """'Job: Succeeded / Run: Failed' with nothing saying why, as the issue saw it: the
    Coder's job succeeds without writing a file and the run fails on it."""
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("coder", [calls(final="nothing to do")])
    run = drive(run_start(session=session, request="Add a greeting helper", user=user))
    assert run.status == RunStatus.FAILED
    board = dev_client.get("/").content.decode()
    card = board[board.index(f'data-session="{session.pk}"') :]
    card = card[: card.index("</article>")]
    assert "Run: Failed" in card
    ending = re.search(r'<p class="card-run-end" data-run-end title="([^"]+)">', card)
    assert ending, card
    assert ending.group(1).startswith(f"failed: {run.error_code} ")
    assert run.message[:40] in ending.group(1)
