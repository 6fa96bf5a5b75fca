"""The live dashboard in a real browser against a real server.

A transition made elsewhere (the REST API, or another process calling the service) shows
on an open board and session page within a second, without a reload; a refused
transition's button never appears; a page that missed an event catches up on reconnect.
Screenshots of every page go to test-artifacts/.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from django.contrib.auth.models import User
from django.db import connection
from rest_framework.authtoken.models import Token

from roles.models import Role
from sessions_app.models import AgentSession, Job
from sessions_app.services.changes import change_record
from sessions_app.services.consents import tool_consent_ask
from sessions_app.services.plans import plan_set
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition
from tests.browser.conftest import ARTIFACTS

pytestmark = pytest.mark.slow

T = TypeVar("T")

# Records every transition button that ever enters the page, even for a moment.
WATCH_BUTTONS = """
window.__seenTransitions = [];
new MutationObserver(() => {
  document.querySelectorAll("button[data-transition]").forEach((b) => {
    const v = b.getAttribute("data-transition");
    if (!window.__seenTransitions.includes(v)) window.__seenTransitions.push(v);
  });
}).observe(document, {subtree: true, childList: true});
"""


def elsewhere(fn: Callable[[], T]) -> T:
    """Run ``fn`` on another thread, as a worker or the CLI would: away from Playwright's
    event loop, with its own database connection, publishing after its own commit."""

    def call() -> T:
        try:
            return fn()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(call).result(timeout=30)


def move(session_id: str, role: str, reason: str) -> Any:
    """A transition as a worker makes it."""
    return session_transition(session=session_id, to_role=role, reason=reason, actor="worker")


def log_in(page: Any, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")


def wait_live(page: Any) -> None:
    page.wait_for_selector("#live[data-state=open]", timeout=10_000)
    # The first push (the full resync on connect) has been swapped in.
    page.wait_for_function("document.body.hasAttribute('data-last-push')", timeout=10_000)


def allowed_now(api: httpx.Client, session_id: str) -> set[str]:
    rows = api.get(f"/api/sessions/{session_id}/transitions/").json()
    return {row["to_role"] for row in rows if row["allowed_now"]}


def test_transitions_made_elsewhere_show_live_on_board_and_session_page(
    live_server_url: str, browser: Any, django_user_model: Any
) -> None:
    base = live_server_url
    lead: User = django_user_model.objects.create_superuser("lead", "l@example.com", "pw-lead-1")
    token = Token.objects.create(user=lead)
    session = session_create(owner=lead, title="Add JWT authentication", task="JWT")
    sid = str(session.id)
    api = httpx.Client(base_url=base, headers={"Authorization": f"Token {token.key}"})

    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.add_init_script(WATCH_BUTTONS)
    errors: list[str] = []
    board = context.new_page()
    board.on("console", lambda m: errors.append(f"board: {m.text}") if m.type == "error" else None)
    board.on("pageerror", lambda e: errors.append(f"board: {e}"))
    log_in(board, base, "lead", "pw-lead-1")
    board.screenshot(path=str(ARTIFACTS / "login-done-board.png"))
    wait_live(board)

    page = context.new_page()
    page.on("console", lambda m: errors.append(f"session: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"session: {e}"))
    page.goto(f"{base}/sessions/{sid}/")
    wait_live(page)
    for p in (board, page):
        p.evaluate("window.__sameDocument = true")

    card = board.locator(f"#card-{sid}")
    assert card.get_attribute("data-role") == "default"
    assert page.locator("#session-header").get_attribute("data-role") == "default"
    shown = set(
        page.locator("button[data-transition]").evaluate_all(
            "els => els.map(e => e.dataset.transition)"
        )
    )
    assert shown == allowed_now(api, sid) == {"planner", "explorer", "product-manager", "tester"}

    # 1. Through the REST API (served by the live server).
    response = api.post(
        f"/api/sessions/{sid}/transition/",
        json={"to_role": "planner", "reason": "Starting feature implementation"},
    )
    assert response.status_code == 200, response.text
    started = time.monotonic()
    board.locator(f"#col-planner #card-{sid}").wait_for(timeout=1000)
    page.locator('#session-header[data-role="planner"]').wait_for(timeout=1000)
    assert time.monotonic() - started < 1.0
    assert board.locator(f"#col-default #card-{sid}").count() == 0
    assert "Starting feature implementation" in page.locator("#session-timeline").inner_text()
    shown = set(
        page.locator("button[data-transition]").evaluate_all(
            "els => els.map(e => e.dataset.transition)"
        )
    )
    assert shown == allowed_now(api, sid) == {"explorer", "default"}  # Coder needs a plan

    # 2. From another process's point of view: a worker sets the plan, then moves on.
    elsewhere(
        lambda: plan_set(
            session=AgentSession.objects.get(pk=sid),
            steps=[{"title": "Token model", "status": "done"}, {"title": "Login view"}],
            actor="worker",
        )
    )
    page.locator("#session-plan .step").first.wait_for(timeout=1000)
    page.locator('button[data-transition="coder"]').wait_for(timeout=1000)
    elsewhere(
        lambda: session_transition(
            session=sid, to_role="coder", reason="Plan approved", actor="worker"
        )
    )
    started = time.monotonic()
    board.locator(f"#col-coder #card-{sid}").wait_for(timeout=1000)
    page.locator('#session-header[data-role="coder"]').wait_for(timeout=1000)
    assert time.monotonic() - started < 1.0
    elsewhere(
        lambda: change_record(
            session=AgentSession.objects.get(pk=sid),
            path="auth/tokens.py",
            kind="created",
            diff="--- /dev/null\n+++ b/auth/tokens.py\n@@ -0,0 +1,2 @@\n+import jwt\n+KEY = 'x'\n",
            actor="worker",
        )
    )
    page.locator("#session-changes .ln-add").first.wait_for(timeout=1000)
    page.locator('button[data-transition="reviewer"]').wait_for(timeout=1000)

    # 3. A page that missed an event resynchronises when it reconnects.
    page.evaluate(
        """() => {
          const ws = document.getElementById('live')['htmx-internal-data'].webSocket;
          ws.socket.onclose = null;  // no automatic reconnect: we miss what follows
          ws.socket.close();
        }"""
    )
    page.wait_for_timeout(200)
    api.post(f"/api/sessions/{sid}/transition/", json={"to_role": "tester", "reason": "Run tests"})
    page.wait_for_timeout(300)
    assert page.locator("#session-header").get_attribute("data-role") == "coder"  # missed it
    page.evaluate("() => document.getElementById('live')['htmx-internal-data'].webSocket.init()")
    page.locator('#session-header[data-role="tester"]').wait_for(timeout=2000)
    board.locator(f"#col-tester #card-{sid}").wait_for(timeout=1000)

    # Nothing reloaded, and the buttons shown are exactly the ones allowed now.
    for p in (board, page):
        assert p.evaluate("window.__sameDocument") is True
    shown = set(
        page.locator("button[data-transition]").evaluate_all(
            "els => els.map(e => e.dataset.transition)"
        )
    )
    assert shown == allowed_now(api, sid)

    board.screenshot(path=str(ARTIFACTS / "board.png"), full_page=True)
    page.screenshot(path=str(ARTIFACTS / "session.png"), full_page=True)
    for name in ("roles", "audit", "usage"):
        page.goto(f"{base}/{name}/")
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    # The audit chain is verified only when a verifier asks for it.
    page.goto(f"{base}/audit/")
    page.get_by_role("button", name="Verify now").click()
    page.locator("#chain-slot .chain-ok").wait_for(timeout=5000)
    assert "Chain intact" in page.locator("#chain-slot").inner_text()
    assert errors == []
    context.close()
    api.close()


def test_refused_transition_button_never_appears(
    live_server_url: str, browser: Any, django_user_model: Any
) -> None:
    base = live_server_url
    dev = django_user_model.objects.create_user("dev", "d@example.com", "pw-dev-12345")
    session = session_create(owner=dev, title="Fix flaky payment test")
    sid = str(session.id)
    context = browser.new_context(viewport={"width": 1366, "height": 800})
    context.add_init_script(WATCH_BUTTONS)
    page = context.new_page()
    page.goto(f"{base}/accounts/login/")
    page.screenshot(path=str(ARTIFACTS / "login.png"))
    log_in(page, base, "dev", "pw-dev-12345")
    page.goto(f"{base}/sessions/{sid}/")
    wait_live(page)

    # Reviewer needs pending changes and Coder a plan: neither may ever be a button here.
    for role, reason in (("planner", "Plan"), ("explorer", "Look"), ("default", "Back")):
        elsewhere(functools.partial(move, sid, role, reason))
        page.locator(f'#session-header[data-role="{role}"]').wait_for(timeout=1000)
    seen = set(page.evaluate("window.__seenTransitions"))
    assert "reviewer" not in seen
    assert "coder" not in seen
    assert page.get_by_text("the session has no pending changes to review").count() == 1

    # A refusal that gets through anyway (a stale form) is shown with its code.
    page.fill("#transition-reason", "Go")
    elsewhere(
        lambda: session_transition(
            session=sid, to_role="planner", reason="Someone else moved first", actor="worker"
        )
    )
    page.locator('#session-header[data-role="planner"]').wait_for(timeout=1000)
    assert page.input_value("#transition-reason") == "Go"  # a push keeps what was typed
    # Make the form stale, as if the push had not arrived yet.
    page.evaluate("document.querySelector('input[name=expected_role]').value = 'default'")
    page.click('button[data-transition="explorer"]')
    page.locator(".message-code").wait_for(timeout=5000)
    assert page.locator(".message-code").inner_text() == "ACODE-ROL-006"
    page.screenshot(path=str(ARTIFACTS / "session-refused.png"), full_page=True)
    context.close()


def test_running_scripted_job_streams_live(
    live_server_url: str, browser: Any, django_user_model: Any
) -> None:
    from sessions_app.agent.loop import run_job
    from sessions_app.services.jobs import job_create
    from tests.sessions_app.jobkit import scripted_model

    base = live_server_url
    lead: User = django_user_model.objects.create_superuser("lead2", "l2@example.com", "pw-lead-2")
    scripted_model(
        "planner",
        [
            {
                "delay": 1.5,
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "a.py", "content": "x"}}
                ],
            },
            {"delay": 1.5, "content": '{"steps": [{"title": "Add the User model"}]}'},
        ],
    )
    session = session_create(owner=lead, title="Live job", task="Plan it")
    session_transition(session=session, to_role="planner", reason="plan", actor="test")
    sid = str(session.id)

    context = browser.new_context(viewport={"width": 1440, "height": 900})
    errors: list[str] = []
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    log_in(page, base, "lead2", "pw-lead-2")
    board = page
    wait_live(board)
    session_page = context.new_page()
    session_page.goto(f"{base}/sessions/{sid}/")
    wait_live(session_page)

    job = elsewhere(
        lambda: job_create(
            session=AgentSession.objects.get(pk=sid), request="Plan the user model", actor="test"
        )
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        # The job runs as a worker would, on another thread; the page follows it live.
        def work() -> None:
            try:
                run_job(job.pk)
            finally:
                connection.close()

        done = pool.submit(work)
        session_page.locator(
            f'#session-jobs [data-job="{job.pk}"][data-status="running"]'
        ).wait_for(timeout=3000)
        denied = session_page.locator("#session-jobs .job-event.tone-denied")
        denied.wait_for(timeout=3000)
        assert "ACODE-ROL-003" in denied.inner_text()
        assert "write_file" in denied.inner_text()
        board.locator(f'#card-{sid} [data-job-status="running"]').wait_for(timeout=3000)
        done.result(timeout=30)
    session_page.locator(f'#session-jobs [data-job="{job.pk}"][data-status="succeeded"]').wait_for(
        timeout=2000
    )
    session_page.locator("#session-plan .step").first.wait_for(timeout=2000)
    board.locator(f'#card-{sid} [data-job-status="succeeded"]').wait_for(timeout=2000)
    session_page.screenshot(path=str(ARTIFACTS / "session-job.png"), full_page=True)
    assert errors == []
    context.close()


def test_archiving_shows_live_and_restoring_brings_the_buttons_back(
    live_server_url: str, browser: Any, django_user_model: Any
) -> None:
    base = live_server_url
    django_user_model.objects.create_user("dev", "d@example.com", "pw-dev-12345")
    session = session_create(owner=User.objects.get(username="dev"), title="Old work")
    sid, workspace = str(session.id), Path(session.workspace)
    pages = []
    for _ in range(2):  # one page archives; the other, open beside it, follows live
        context = browser.new_context(viewport={"width": 1366, "height": 800})
        page = context.new_page()
        log_in(page, base, "dev", "pw-dev-12345")
        page.goto(f"{base}/sessions/{sid}/")
        wait_live(page)
        pages.append(page)
    acting, watching = pages
    assert watching.locator("button[data-transition]").count() > 0

    acting.click("button[data-archive]")
    acting.locator("[data-archived]").wait_for(timeout=5000)
    watching.locator("[data-archived]").wait_for(timeout=2000)
    assert watching.locator("button[data-transition]").count() == 0
    assert watching.locator("button[data-restore]").count() == 1
    assert not workspace.exists(), "its checkout is freed"
    watching.screenshot(path=str(ARTIFACTS / "session-archived.png"), full_page=True)

    watching.click("button[data-restore]")
    acting.locator("button[data-archive]").wait_for(timeout=2000)
    assert acting.locator("[data-archived]").count() == 0
    acting.locator("button[data-transition]").first.wait_for(timeout=2000)
    assert workspace.is_dir()
    for page in pages:
        page.context.close()


def test_a_consent_is_answered_from_a_page_whose_jobs_panel_was_pushed(
    live_server_url: str, browser: Any, django_user_model: Any
) -> None:
    """A pushed fragment has no CSRF token of its own: its forms post through htmx, whose
    header carries the page's (a plain form there was refused with 403)."""
    base = live_server_url
    dev = django_user_model.objects.create_user("dev", "d@example.com", "pw-dev-12345")
    session = session_create(owner=dev, title="Clean the build")
    job = Job.objects.create(session=session, role=Role.objects.get(slug="tester"),
                             request="t", created_by="dev", status="running")  # fmt: skip
    consent = tool_consent_ask(
        session=session, job=job, role="tester", tool="execute_command", target="rm build/x",
        rule="command_rules[0]: rm", reason="needs a person", arguments={"argv": ["rm", "build/x"]},
        asked_audit_id=None,
    )  # fmt: skip
    context = browser.new_context(viewport={"width": 1366, "height": 800})
    page = context.new_page()
    log_in(page, base, "dev", "pw-dev-12345")
    page.goto(f"{base}/sessions/{session.pk}/")
    wait_live(page)  # the connect's resync pushed every fragment, the jobs panel too
    assert page.locator('.consent-form input[name="csrfmiddlewaretoken"]').count() == 0
    page.click('button[data-answer="allow"]')
    page.get_by_text("The call was allowed.").wait_for(timeout=5000)
    consent.refresh_from_db()
    assert consent.status == "allowed"
    context.close()
