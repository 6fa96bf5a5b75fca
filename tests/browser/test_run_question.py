"""A run in a real browser: started from the session page's Run form, its Coder asks a
person (``ask_human``), the question shows live, the answer typed in the dashboard resumes
the run, and the page follows it to the end without a reload.

The run's jobs run in this process as a worker would (``runkit.drive`` on another
thread); the page hears of every step over its websocket.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app.models import Run, RunStatus
from sessions_app.services.sessions import session_create
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_live_dashboard import elsewhere, log_in, wait_live
from tests.sessions_app import runkit
from tests.sessions_app.jobkit import scripted_model

pytestmark = pytest.mark.slow

QUESTION = "Which greeting language?"


def drive_run(run_id: Any) -> Run:
    """The run's queued jobs, run to its next pause or its end, on a worker's thread."""
    return elsewhere(lambda: runkit.drive(Run.objects.get(pk=run_id)))


def test_a_question_from_a_run_is_answered_on_the_page_and_the_run_ends_live(
    live_server_url: str, browser: Any, django_user_model: Any
) -> None:
    base = live_server_url
    dev: User = django_user_model.objects.create_user("dev", "d@example.com", "pw-dev-12345")
    scripted_model(
        "coder",
        [
            runkit.calls(("ask_human", {"question": QUESTION}), final="asked"),
            runkit.calls(("create_file", {"path": "greet.py", "content": runkit.FIRST})),
        ],
    )
    scripted_model("tester", [runkit.script_tester()])
    scripted_model("reviewer", [runkit.review("approve", "looks right")])
    session = session_create(owner=dev, title="Greeting helper", task="Say hello")

    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    errors: list[str] = []
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    log_in(page, base, "dev", "pw-dev-12345")
    page.goto(f"{base}/sessions/{session.id}/")
    wait_live(page)
    page.evaluate("window.__sameDocument = true")
    panel = page.locator("#run-panel")
    assert panel.get_attribute("data-status") == "none"

    # Start the run from the form (htmx swaps the panel in).
    page.fill("#run-request", "Add a greeting helper")
    assert page.input_value("#run-risk") == "low"
    page.click('#run-panel [data-action="start"]')
    page.locator('#run-panel[data-status="running"]').wait_for(timeout=5000)
    run = Run.objects.get(session=session)
    assert (
        page.locator('#run-panel .pipeline-node[data-state="current"]').get_attribute(
            "data-purpose"
        )
        == "code"
    )

    # The Coder's job asks a person: the run pauses and the page shows the question live.
    assert drive_run(run.pk).status == RunStatus.AWAITING_INPUT
    page.locator('#run-panel[data-status="awaiting_input"]').wait_for(timeout=5000)
    assert page.locator("#run-panel .run-question-text").inner_text() == QUESTION
    page.screenshot(path=str(ARTIFACTS / "run-question.png"), full_page=True)

    # The answer typed here resumes the run.
    page.fill('#run-panel textarea[name="answer"]', "English, please")
    page.click('#run-panel [data-action="answer"]')
    page.locator('#run-panel[data-status="running"]').wait_for(timeout=5000)
    assert "English, please" in page.locator("#run-panel .run-answers").inner_text()
    run.refresh_from_db()
    assert run.questions.get().answer == "English, please"

    # The rest of the run executes elsewhere; the page follows it to the end.
    assert drive_run(run.pk).status == RunStatus.SUCCEEDED
    page.locator('#run-panel[data-status="succeeded"]').wait_for(timeout=5000)
    page.locator('#run-panel .run-verdict[data-verdict="approve"]').wait_for(timeout=5000)
    states = panel.locator(".pipeline-node").evaluate_all(
        "els => els.map(e => [e.dataset.purpose, e.dataset.state])"
    )
    assert states == [["code", "done"], ["test", "done"], ["review", "done"]]
    assert "All steps complete" in panel.inner_text()
    page.locator('#session-header[data-role="default"]').wait_for(timeout=5000)
    assert page.evaluate("window.__sameDocument") is True  # no reload
    page.screenshot(path=str(ARTIFACTS / "run-succeeded.png"), full_page=True)
    assert errors == []
    context.close()
