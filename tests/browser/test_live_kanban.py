"""The kanban in two browsers (issue 40): the project's owner and a team lead who may only
look have its board open. The owner accepts the Product Manager's proposal and raises a
priority in the browser; then a real Celery worker with beat (scripted models) runs the
backlog: the scheduler starts the two highest-priority tasks while the third waits for
room, one merges, one is blocked, the third runs after them; the owner unblocks the
blocked one and it runs again. Both pages follow every move live, without a reload; the
lead's page follows the owner's actions and never shows an action.

Every card state a page shows, even for a moment, is recorded in the page, so a move
that lasted less than an assertion's poll still counts.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

from roles.services import role_write
from sessions_app.models import BacklogTask
from sessions_app.services.backlog import backlog_import
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_live_dashboard import log_in, wait_live
from tests.sessions_app.backlog.kit import coded, coder_writes, project_with_spec, wrote_nothing
from tests.sessions_app.runkit import calls
from tests.sessions_app.test_tasks import Worker

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"), reason="needs a Redis broker (make test provides one)"
    ),
]

# Records every card state (task:status, and task:waiting) and every action control the
# kanban ever shows, even for a moment.
WATCH = """
window.__seen = new Set();
window.__seenActions = 0;
new MutationObserver(() => {
  document.querySelectorAll("#backlog-kanban article[data-task]").forEach((card) => {
    window.__seen.add(card.dataset.task + ":" + card.dataset.status);
    if (card.querySelector("[data-waiting]")) window.__seen.add(card.dataset.task + ":waiting");
  });
  window.__seenActions += document.querySelectorAll(
    "#backlog-kanban .card-actions, #backlog-kanban form, #backlog-kanban button").length;
}).observe(document, {subtree: true, childList: true, attributes: true});
"""
MOVES = 90_000  # ms a move driven by the worker may take to show


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for one in started:
        one.stop()


def column(page: Any, key: str, status: str, timeout: float = 10_000) -> None:
    """Wait until the page shows the task's card in the status's column."""
    page.locator(f"#backlog-col-{status} #task-{key}").wait_for(timeout=timeout)


def seen(page: Any) -> set[str]:
    return set(page.evaluate("[...window.__seen]"))


def test_two_browsers_follow_the_kanban_live_and_only_the_owner_acts(
    live_server_url: str,
    browser: Any,
    user: User,
    django_user_model: Any,
    tmp_path: Path,
    worker: list[Worker],
) -> None:
    base = live_server_url
    lead = django_user_model.objects.create_user("lead", "l@example.com", "pw-lead-123")
    lead.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    queue = f"test-kanban-{uuid.uuid4().hex[:8]}"
    for role in ("coder", "tester", "reviewer"):
        role_write(data={"queue": queue}, create=False, slug=role, actor="test")
    docs = calls(("create_file", {"path": "docs.md", "content": "# Docs\n"}), final="docs")
    templates = coded(hello=[coder_writes("hello")], bye=[wrote_nothing()] * 2, docs=[docs])
    project = project_with_spec(
        user, tmp_path, {"hello": templates["hello"], "bye": templates["bye"]},
        max_concurrent_runs=2, max_task_attempts=1,
    )  # fmt: skip
    proposal = {"key": "docs", "title": "Write the docs", "template": templates["docs"]}
    unwanted = {"key": "extra", "title": "Rewrite it all", "template": templates["docs"]}
    backlog_import(project=project, actor="pm", proposed_by="product-manager",
                   document={"tasks": [proposal, unwanted]})  # fmt: skip
    board = f"{base}/backlog/{project.slug}/"

    errors: list[str] = []
    pages: dict[str, Any] = {}
    for name, login in (("owner", ("dev", "pw-dev-123")), ("lead", ("lead", "pw-lead-123"))):
        context = browser.new_context(viewport={"width": 1600, "height": 1000})
        context.add_init_script(WATCH)
        page = context.new_page()
        page.on("pageerror", lambda e, n=name: errors.append(f"{n}: {e}"))
        page.on("response", lambda r, n=name: (
            errors.append(f"{n}: {r.status} {r.url}") if r.status >= 400 else None
        ))  # fmt: skip
        log_in(page, base, *login)
        page.goto(board)
        wait_live(page)
        page.evaluate("window.__sameDocument = true")
        pages[name] = page
    owner, lead_page = pages["owner"], pages["lead"]
    for page in pages.values():
        column(page, "docs", "proposed")

    # The owner accepts the Product Manager's proposal; the lead's page follows.
    owner.locator("#task-docs button", has_text="Accept").click()
    for page in pages.values():
        column(page, "docs", "backlog")
    # The owner rejects the other proposal, saying why; both pages list it as rejected.
    owner.locator("#task-extra input[name=reason]").fill("Not in this release")
    owner.locator("#task-extra button", has_text="Reject").click()
    for page in pages.values():
        page.locator(
            "#backlog-rejected #task-extra [data-reason]", has_text="Not in this release"
        ).wait_for(state="attached", timeout=10_000)
        assert page.locator("#backlog-col-proposed #task-extra").count() == 0
    # The owner raises bye's priority over docs; the lead's card shows it.
    owner.locator("#task-bye select[name=priority]").select_option("high")
    owner.locator("#task-bye button", has_text="Set").click()
    lead_page.locator("#task-bye [data-priority]", has_text="high").wait_for(timeout=10_000)

    # A real worker with beat runs the backlog from here.
    log = tmp_path / "worker.log"
    worker.append(Worker(queue, log, beat=True, concurrency=2,
                         extra_env={"ACODE_BACKLOG_TICK_SECONDS": "1"}))  # fmt: skip
    for page in pages.values():
        column(page, "hello", "done", MOVES)
        column(page, "bye", "blocked", MOVES)
        column(page, "docs", "done", MOVES)
        page.locator("#task-bye [data-reason]", has_text="ended").wait_for(timeout=10_000)
    owner.screenshot(path=str(ARTIFACTS / "kanban-owner-blocked.png"))
    for name, page in pages.items():
        states = seen(page)
        # hello and bye ran together while docs waited for room; docs ran after them.
        assert {"hello:in_progress", "bye:in_progress", "docs:waiting", "docs:in_progress",
                "hello:done", "bye:blocked", "docs:done"} <= states, (name, states)  # fmt: skip

    # The owner unblocks bye: it goes back to the backlog, runs again and blocks again.
    for page in pages.values():
        page.evaluate("window.__seen = new Set()")
    owner.locator("#task-bye button", has_text="Unblock").click()
    for page in pages.values():
        page.wait_for_function("window.__seen.has('bye:in_progress')", timeout=MOVES)
        column(page, "bye", "blocked", MOVES)
    lead_page.screenshot(path=str(ARTIFACTS / "kanban-lead-unblocked-again.png"))
    # The owner's page shows bye back in the backlog (its answer); a page that hears of
    # it over the socket may already see the next tick's start, which shows the latest.
    assert "bye:backlog" in seen(owner)

    # Neither page reloaded; the lead never saw an action, the owner had them all along.
    for name, page in pages.items():
        assert page.evaluate("window.__sameDocument") is True, name
    assert lead_page.evaluate("window.__seenActions") == 0
    assert lead_page.locator("#backlog-kanban form").count() == 0
    assert owner.locator("#task-bye form").count() >= 1
    assert errors == [], log.read_text()[-3000:]
    tasks = {t.key: t for t in BacklogTask.objects.all()}
    assert {k: t.status for k, t in tasks.items()} == {
        "hello": "done", "bye": "blocked", "both": "backlog", "docs": "done", "extra": "rejected",
    }  # fmt: skip
    assert tasks["bye"].attempts == 2
