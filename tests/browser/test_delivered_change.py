"""The first hour's result, in two real browsers: a session created from the dashboard on
a registered repository, a high-risk run with scripted models through a question (answered
on the page), the approval gate, and approval by a second person; then the commit, its
branch, the files and the patch link appear on both people's pages without a reload, and
so does the push of branch ``acode/<session>`` to the repository's (bare, local) remote.

The run's jobs and the push run in this process as a worker would (on another thread);
each page hears of every step over its websocket.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

from sessions_app.models import AgentSession, DeliveredCommit, Repository, Run, RunStatus
from sessions_app.services.deliveries import delivered_commit_push
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_live_dashboard import elsewhere, log_in, wait_live
from tests.browser.test_run_question import drive_run
from tests.sessions_app import runkit
from tests.sessions_app.jobkit import scripted_model

pytestmark = pytest.mark.slow

TASK = "Add a greeting helper greet() in greet.py"
QUESTION = "Which greeting language?"


def script_models() -> None:
    scripted_model("planner", [[{"content": runkit.PLAN_ONE_STEP}]])
    scripted_model("explorer", [[{"content": "greet.py does not exist yet."}]])
    scripted_model(
        "coder",
        [
            runkit.calls(("ask_human", {"question": QUESTION}), final="asked"),
            runkit.calls(("create_file", {"path": "greet.py", "content": runkit.FIRST})),
        ],
    )
    scripted_model("tester", [runkit.script_tester()])
    scripted_model("reviewer", [runkit.review("approve", "looks right")])


def watch(page: Any, errors: list[str]) -> None:
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)


def test_a_run_approved_by_a_second_person_shows_the_delivered_commit_on_both_pages(
    live_server_url: str, browser: Any, django_user_model: Any, tmp_path: Path
) -> None:
    base = live_server_url
    remote = runkit.bare_remote(tmp_path / "app.git")
    dev: User = django_user_model.objects.create_user("dev", "d@example.com", "pw-dev-12345")
    lead: User = django_user_model.objects.create_user("lead", "l@example.com", "pw-lead-12345")
    lead = runkit.grant_approve(lead)
    lead.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    Repository.objects.create(name="app", source=str(remote), pushable=True).users.add(dev)
    script_models()

    errors: list[str] = []
    dev_page = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
    lead_page = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
    for page in (dev_page, lead_page):
        watch(page, errors)

    # The developer opens a session from the board's New session form.
    log_in(dev_page, base, "dev", "pw-dev-12345")
    dev_page.click("details.new-session summary")
    dev_page.fill("#new-session-title-input", "Greeting helper")
    dev_page.fill("#new-session-task", TASK)
    dev_page.select_option("#new-session-repository", "app")
    dev_page.click(".new-session-form button[type=submit]")
    dev_page.wait_for_url(f"{base}/sessions/*/")
    session = AgentSession.objects.get(title="Greeting helper")
    assert session.repository is not None and session.branch == f"acode/{session.pk}"
    wait_live(dev_page)

    # The lead follows the same session.
    log_in(lead_page, base, "lead", "pw-lead-12345")
    lead_page.goto(f"{base}/sessions/{session.pk}/")
    wait_live(lead_page)
    for page in (dev_page, lead_page):
        page.evaluate("window.__sameDocument = true")
        assert page.locator("#session-delivered").get_attribute("data-commits") == "0"

    # The Run form starts with the session's task; the developer asks for a high-risk run.
    assert dev_page.input_value("#run-request") == TASK
    dev_page.select_option("#run-risk", "high")
    dev_page.click('#run-panel [data-action="start"]')
    dev_page.locator('#run-panel[data-status="running"]').wait_for(timeout=5000)
    run = Run.objects.get(session=session)

    # Planner, Explorer, then the Coder asks a person; the answer is typed on the page.
    assert drive_run(run.pk).status == RunStatus.AWAITING_INPUT
    dev_page.locator('#run-panel[data-status="awaiting_input"]').wait_for(timeout=5000)
    assert dev_page.locator("#run-panel .run-question-text").inner_text() == QUESTION
    dev_page.locator('#session-header [data-waiting="an answer"]').wait_for(timeout=5000)
    dev_page.fill('#run-panel textarea[name="answer"]', "English, please")
    dev_page.click('#run-panel [data-action="answer"]')
    dev_page.locator('#run-panel[data-status="running"]').wait_for(timeout=5000)

    # The rest runs to the gate: both pages see it waiting for approval, at high risk.
    assert drive_run(run.pk).status == RunStatus.AWAITING_APPROVAL
    for page in (dev_page, lead_page):
        page.locator('#run-panel[data-status="awaiting_approval"]').wait_for(timeout=5000)
        page.locator('#session-header [data-waiting="approval"]').wait_for(timeout=5000)
        assert page.locator("#session-header [data-risk]").get_attribute("data-risk") == "high"
    assert dev_page.locator('#run-panel [data-action="approve"]').count() == 0  # the starter
    dev_page.screenshot(path=str(ARTIFACTS / "delivered-gate.png"), full_page=True)

    # The second person approves on their page.
    lead_page.click('#run-panel [data-action="approve"]')
    lead_page.locator('#run-panel[data-status="succeeded"]').wait_for(timeout=5000)
    commit = DeliveredCommit.objects.get(session=session)
    patch_url = f"/api/sessions/{session.pk}/patch/?commit={commit.sha}"

    # Both pages show the commit, its branch, its file and the patch link, live.
    for page in (dev_page, lead_page):
        for where in ("#run-panel", "#session-delivered"):
            card = page.locator(f'{where} .delivered[data-commit="{commit.sha}"]')
            # Live, not at once: on CI's two loaded cores the push has taken over 5 s.
            card.wait_for(timeout=15000)
            assert card.locator(".delivered-sha").inner_text() == commit.sha[:12]
            assert card.locator(".delivered-branch").inner_text() == session.branch
            assert card.locator(".delivered-path").all_inner_texts() == ["greet.py"]
            assert card.locator("a.delivered-patch").get_attribute("href") == patch_url
            assert card.locator('[data-push-status="pending"]').count() == 1
        assert page.locator("#session-header [data-waiting]").count() == 0

    # A worker pushes the branch to the remote: both pages say so, live.
    pushed = elsewhere(lambda: delivered_commit_push(commit.pk))
    assert pushed is not None and pushed.push_status == "pushed"
    assert runkit.remote_branch(remote, session.branch) == commit.sha
    for page in (dev_page, lead_page):
        page.locator('#session-delivered [data-push-status="pushed"]').wait_for(timeout=5000)
        page.locator('#run-panel [data-push-status="pushed"]').wait_for(timeout=5000)
        assert page.evaluate("window.__sameDocument") is True  # no reload

    # The link downloads the commit as a patch.
    download = dev_page.request.get(f"{base}{patch_url}")
    assert download.status == 200 and "+def greet():" in download.text()
    dev_page.screenshot(path=str(ARTIFACTS / "delivered-dev.png"), full_page=True)
    lead_page.screenshot(path=str(ARTIFACTS / "delivered-lead.png"), full_page=True)
    assert errors == []
