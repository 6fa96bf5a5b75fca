"""``make demo`` in a real browser (issue 34): the demo's set-up, then a medium-risk run
started on the page goes plan → code → test → review to a commit and a patch while the
page shows what each stage waits on (the counter ticks, the LLM-call count moves as the
scripted models answer, two seconds late each); then a high-risk run stops at the approval
gate and the second demo user approves it. The badges say what happened: the run's
status, each stage's role, the jobs' scripted model, the board card's job and run.

The run's jobs run in this process as a worker would (on another thread), each model
answer delayed as the demo's scripts say; the page hears every step over its websocket.
"""

from __future__ import annotations

import re
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connection
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from sessions_app.management import demo
from sessions_app.models import DeliveredCommit, Run, RunStatus
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_delivered_change import watch
from tests.browser.test_live_dashboard import log_in, wait_live
from tests.sessions_app import runkit

pytestmark = pytest.mark.slow

THINK = 2  # seconds a scripted answer takes here (the demo's own: 3)


def drive_in_background(pool: ThreadPoolExecutor, run_id: Any) -> Future[Run]:
    """Run the run's jobs on a worker's thread while the test watches the page."""

    def call() -> Run:
        try:
            return runkit.drive(Run.objects.get(pk=run_id))
        finally:
            connection.close()

    return pool.submit(call)


def count(text: str) -> int:
    found = re.match(r"\s*([\d,]+)", text)
    return int(found.group(1).replace(",", "")) if found else -1


def start_run(page: Any, risk: str) -> Run:
    assert page.input_value("#run-request") == demo.REQUEST  # the session's task
    page.select_option("#run-risk", risk)
    page.click('#run-panel [data-action="start"]')
    page.locator('#run-panel[data-status="running"]').wait_for(timeout=5000)
    return Run.objects.order_by("-created_at").first()  # type: ignore[return-value]


def watch_the_wait(page: Any) -> None:
    """A stage waits on its scripted model: the page says so, its counter ticks, and the
    LLM-call count moves while the run is still running."""
    line = page.locator('#run-panel .waiting-line[data-waiting-on="model"]')
    line.wait_for(timeout=15000)
    assert "Waiting for the model (endpoint demo-" in line.inner_text()
    calls = page.locator('#run-panel [data-budget="llm calls"] dd')
    first_calls = count(calls.inner_text())
    ticked = False
    for _ in range(30):  # the counter ticks each second; the next answer moves the calls
        # Between one wait and the next (a stage finishing, the next one's job starting)
        # no line is shown: under load that lasted over 5 s once.
        before = waiting_for(page)
        page.wait_for_timeout(1100)
        now = waiting_for(page)
        if before is not None and now is not None and now != before:
            ticked = True
        if ticked and count(calls.inner_text()) > first_calls:
            break
    assert ticked, "the waiting counter never moved"
    assert count(calls.inner_text()) > first_calls, "the LLM-call count never moved"
    assert page.locator("#run-panel").get_attribute("data-status") == "running"


def waiting_for(page: Any) -> str | None:
    """The waiting line's counter as shown now; None while no stage waits."""
    try:
        return str(page.locator("#run-panel .waiting-line time").first.inner_text(timeout=500))
    except PlaywrightTimeout:
        return None


def test_the_demo_takes_a_request_to_a_commit_and_through_the_approval_gate(
    live_server_url: str, browser: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = live_server_url
    scripts = {r: [{**s, "delay": THINK} for s in steps] for r, steps in demo.SCRIPTS.items()}
    monkeypatch.setattr(demo, "SCRIPTS", scripts)
    world = demo.demo_setup()
    errors: list[str] = []
    page = browser.new_context(viewport={"width": 1440, "height": 1100}).new_page()
    watch(page, errors)
    log_in(page, base, "demo", world.passwords["demo"])

    # 1. A medium-risk run to a commit and a patch, watched as it waits on its models.
    page.goto(f"{base}/sessions/{world.medium.pk}/")
    wait_live(page)
    with ThreadPoolExecutor(max_workers=1) as pool:
        run = start_run(page, "medium")
        driving = drive_in_background(pool, run.pk)
        watch_the_wait(page)
        page.screenshot(path=str(ARTIFACTS / "demo-waiting.png"), full_page=True)
        assert driving.result(timeout=180).status == RunStatus.SUCCEEDED
    page.locator('#run-panel[data-status="succeeded"]').wait_for(timeout=10000)
    panel = page.locator("#run-panel")
    assert panel.locator(".pill-run-succeeded").inner_text().strip() == "Succeeded"
    stage_roles = panel.locator(".run-stage .badge").evaluate_all(
        "els => els.map(e => e.dataset.role)"
    )
    assert stage_roles == ["planner", "coder", "tester", "reviewer"]
    evidence = panel.locator(".run-evidence summary").all_inner_texts()  # the plan's, the tests'
    assert any(
        "Test evidence: python -m pytest -q test_greet.py passed (exit 0)" in text
        for text in evidence
    ), evidence
    assert panel.locator(".waiting-line").count() == 0  # nothing is waited on any more
    commit = DeliveredCommit.objects.get(session=world.medium)
    card = panel.locator(f'.delivered[data-commit="{commit.sha}"]')
    card.wait_for(timeout=5000)
    assert sorted(card.locator(".delivered-path").all_inner_texts()) == [
        "greet.py",
        "test_greet.py",
    ]
    patch = page.request.get(f"{base}{card.locator('a.delivered-patch').get_attribute('href')}")
    assert patch.status == 200 and "+def greet(name: str) -> str:" in patch.text()
    # The jobs say their model was scripted.
    facts = page.locator("#session-jobs .job-facts").all_inner_texts()
    assert facts and all("(scripted)" in f for f in facts), facts
    # The board card's badges: the job and the run, both succeeded.
    page.goto(f"{base}/")
    board_card = page.locator(f'[data-session="{world.medium.pk}"]')
    assert "Job: Succeeded" in board_card.inner_text()
    assert "Run: Succeeded" in board_card.inner_text()

    # 2. A high-risk run stops at the approval gate; the second demo user approves it.
    page.goto(f"{base}/sessions/{world.high.pk}/")
    wait_live(page)
    with ThreadPoolExecutor(max_workers=1) as pool:
        high = start_run(page, "high")
        assert drive_in_background(pool, high.pk).result(timeout=180).status == (
            RunStatus.AWAITING_APPROVAL
        )
    page.locator('#run-panel[data-status="awaiting_approval"]').wait_for(timeout=10000)
    assert page.locator('#run-panel [data-action="approve"]').count() == 0  # the starter
    approver = browser.new_context(viewport={"width": 1440, "height": 1100}).new_page()
    watch(approver, errors)
    log_in(approver, base, "demo-approver", world.passwords["demo-approver"])
    approver.goto(f"{base}/sessions/{world.high.pk}/")
    wait_live(approver)
    approver.click('#run-panel [data-action="approve"]')
    approver.locator('#run-panel[data-status="succeeded"]').wait_for(timeout=10000)
    page.locator('#run-panel[data-status="succeeded"]').wait_for(timeout=10000)  # live
    assert DeliveredCommit.objects.filter(session=world.high).count() == 1
    page.screenshot(path=str(ARTIFACTS / "demo-approved.png"), full_page=True)
    assert errors == []
