"""The kanban in two browsers (issue 40): the project's owner and a team lead who may only
look have its board open; as the scheduler starts tasks, their runs end and tasks merge,
block and wait, both pages follow every move live, without a reload. The owner's actions
in the browser (accept a proposal, reprioritise, unblock) work and the lead's page
follows; the lead never sees an action.

The scheduler's ticks and the runs' jobs run in this process as a worker would (on
another thread, with its own connection, publishing after its own commit); the pages hear
of every change over their websockets from the live server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

from sessions_app.models import BacklogTask, Run, RunStatus
from sessions_app.services.backlog import backlog_import
from sessions_app.services.backlog_scheduler import backlog_schedule
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_live_dashboard import elsewhere, log_in, wait_live
from tests.sessions_app import runkit
from tests.sessions_app.backlog.kit import coded, coder_writes, project_with_spec, wrote_nothing

pytestmark = pytest.mark.slow

# Records every action control that ever enters the page, even for a moment.
WATCH_ACTIONS = """
window.__seenActions = 0;
new MutationObserver(() => {
  window.__seenActions += document.querySelectorAll(
    "#backlog-kanban .card-actions, #backlog-kanban form, #backlog-kanban button").length;
}).observe(document, {subtree: true, childList: true});
"""


def column(page: Any, key: str, status: str) -> None:
    """Wait until the page shows the task's card in the status's column."""
    page.locator(f"#backlog-col-{status} #task-{key}").wait_for(timeout=10_000)


def both(pages: dict[str, Any], key: str, status: str) -> None:
    for page in pages.values():
        column(page, key, status)


def tick() -> list[str]:
    return elsewhere(backlog_schedule)


def drive(key: str) -> Run:
    def work() -> Run:
        run = BacklogTask.objects.get(key=key).run
        assert run is not None
        return runkit.drive(run)

    return elsewhere(work)


def test_two_browsers_follow_the_kanban_live_and_only_the_owner_acts(
    live_server_url: str,
    browser: Any,
    user: User,
    django_user_model: Any,
    tmp_path: Path,
) -> None:
    base = live_server_url
    lead = django_user_model.objects.create_user("lead", "l@example.com", "pw-lead-123")
    lead.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    templates = coded(hello=[coder_writes("hello")], bye=[wrote_nothing()] * 2)
    project = project_with_spec(
        user, tmp_path, templates, max_concurrent_runs=2, max_task_attempts=1
    )
    backlog_import(project=project, actor="pm", proposed_by="product-manager",
                   document={"tasks": [{"key": "docs", "title": "Write the docs"}]})  # fmt: skip
    board = f"{base}/backlog/{project.slug}/"

    errors: list[str] = []
    pages: dict[str, Any] = {}
    for name, login in (("owner", ("dev", "pw-dev-123")), ("lead", ("lead", "pw-lead-123"))):
        context = browser.new_context(viewport={"width": 1600, "height": 1000})
        context.add_init_script(WATCH_ACTIONS)
        page = context.new_page()
        page.on("pageerror", lambda e, n=name: errors.append(f"{n}: {e}"))
        page.on(
            "response",
            lambda r, n=name: (
                errors.append(f"{n}: {r.status} {r.url}") if r.status >= 400 else None
            ),
        )
        log_in(page, base, *login)
        page.goto(board)
        wait_live(page)
        page.evaluate("window.__sameDocument = true")
        pages[name] = page
    owner, lead_page = pages["owner"], pages["lead"]
    both(pages, "docs", "proposed")
    both(pages, "hello", "backlog")

    # The owner accepts the Product Manager's proposal; the lead's page follows.
    owner.locator("#task-docs button", has_text="Accept").click()
    both(pages, "docs", "backlog")
    # The owner raises bye's priority; the lead's card shows it.
    owner.locator("#task-bye select[name=priority]").select_option("high")
    owner.locator("#task-bye button", has_text="Set").click()
    lead_page.locator("#task-bye [data-priority]", has_text="high").wait_for(timeout=10_000)

    # The scheduler starts the two highest-priority ready tasks; docs waits for room.
    assert tick() == ["hello", "bye"]
    both(pages, "hello", "in_progress")
    both(pages, "bye", "in_progress")
    for page in pages.values():
        page.locator("#task-docs [data-waiting]", has_text="at most 2 tasks").wait_for(
            timeout=10_000
        )
        page.locator("#task-hello [data-stage]").wait_for(timeout=10_000)
    pages["lead"].screenshot(path=str(ARTIFACTS / "kanban-lead-in-progress.png"))

    # hello's run succeeds and merges; bye's Coder writes nothing: blocked, with why.
    assert drive("hello").status == RunStatus.SUCCEEDED
    assert drive("bye").status in (RunStatus.BLOCKED, RunStatus.FAILED)
    assert tick() == ["docs"]
    both(pages, "hello", "done")
    both(pages, "bye", "blocked")
    both(pages, "docs", "in_progress")
    for page in pages.values():
        page.locator("#task-bye [data-reason]", has_text="ended").wait_for(timeout=10_000)
    owner.screenshot(path=str(ARTIFACTS / "kanban-owner-blocked.png"))

    # The owner unblocks bye; the lead's page follows.
    owner.locator("#task-bye button", has_text="Unblock").click()
    both(pages, "bye", "backlog")
    lead_page.screenshot(path=str(ARTIFACTS / "kanban-lead-unblocked.png"))

    # Neither page reloaded; the lead never saw an action, the owner had them all along.
    for name, page in pages.items():
        assert page.evaluate("window.__sameDocument") is True, name
    assert lead_page.evaluate("window.__seenActions") == 0
    assert lead_page.locator("#backlog-kanban form").count() == 0
    assert owner.locator("#task-bye form").count() >= 1
    assert errors == []
    assert dict(BacklogTask.objects.values_list("key", "status")) == {
        "hello": "done", "bye": "backlog", "both": "backlog", "docs": "in_progress",
    }  # fmt: skip
