"""A test stage's result follows the test command's exit status (issue 34: "Tests: … ok"
was shown for "no tests ran [exit 5]"); a template may require passing tests before a run
can pass (medium and high by default); a run that passed without them says so.

The suite runs with ACODE_RUN_REQUIRE_TESTS_TIERS empty (tests/xdist_isolation.py: its
scripted Coders write no tests); these tests put the default back."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from sessions_app.management import demo
from sessions_app.models import AgentSession, RunStatus, WorkflowTemplate
from sessions_app.services.runs import run_start
from sessions_app.services.runs.stages import outcome_of_tests
from tests.sessions_app.dashboard.test_runs import page, panel
from tests.sessions_app.runkit import drive, review, script_medium_run

pytestmark = pytest.mark.django_db

DEFAULT_TIERS = ["medium", "high"]


@pytest.mark.parametrize(
    ("command", "ended", "expected"),
    [
        ("python -m pytest -q", "exit 0", ("passed", "passed (exit 0)")),
        ("python -m pytest -q", "exit 1", ("failed", "tests failed (exit 1)")),
        ("pytest -q", "exit 2", ("error", "error: the test run was interrupted (exit 2)")),
        ("pytest", "exit 4", ("error", "error: pytest was called wrongly (exit 4)")),
        ("python -m pytest -q", "exit 5", ("no_tests", "no tests collected (exit 5)")),
        ("make check", "exit 2", ("failed", "failed (exit 2)")),
        ("pytest", "timed out", ("timed_out", "timed out")),
    ],
)
def test_the_result_follows_the_exit_status(
    command: str, ended: str, expected: tuple[str, str]
) -> None:
    assert outcome_of_tests(command, ended) == expected


def medium_run(session: AgentSession, user: User) -> Any:
    """runkit's medium run: its Coder writes greet.py and no test; its Tester runs pytest."""
    script_medium_run(reviews=[review("approve", "looks right")])
    return drive(
        run_start(session=session, request="Add a greeting helper", user=user, risk="medium")
    )


def test_a_medium_run_without_tests_fails_by_default(
    session: AgentSession, user: User, settings: Any, dev_client: Client
) -> None:
    settings.ACODE_RUN_REQUIRE_TESTS_TIERS = DEFAULT_TIERS
    run = medium_run(session, user)
    assert run.status == RunStatus.FAILED and run.error_code == "ACODE-RUN-012"
    assert "requires passing tests before a run can pass" in run.message
    evidence = run.stages.get(purpose="test").evidence
    assert evidence["result"] == "no_tests" and evidence["status"] == "no tests collected (exit 5)"
    assert "no tests collected (exit 5)" in run.message
    shown = panel(page(dev_client, session))
    assert "Test evidence: <code>python -m pytest -q</code> no tests collected (exit 5)" in shown


def test_a_run_that_passed_without_tests_says_so(
    session: AgentSession, user: User, settings: Any
) -> None:
    settings.ACODE_RUN_REQUIRE_TESTS_TIERS = []  # no tier requires them
    run = medium_run(session, user)
    assert run.status == RunStatus.SUCCEEDED
    assert run.message == (
        "All steps complete. Note: the last test run ended: no tests collected (exit 5)."
    )


def test_a_template_may_turn_the_requirement_off_or_on(
    session: AgentSession, user: User, settings: Any
) -> None:
    settings.ACODE_RUN_REQUIRE_TESTS_TIERS = DEFAULT_TIERS
    WorkflowTemplate.objects.filter(slug="medium").update(require_tests=False)
    assert medium_run(session, user).status == RunStatus.SUCCEEDED
    settings.ACODE_RUN_REQUIRE_TESTS_TIERS = []
    WorkflowTemplate.objects.filter(slug="medium").update(require_tests=True)
    again = run_start(session=session, request="Add a greeting helper", user=user, risk="medium")
    assert drive(again).error_code == "ACODE-RUN-012"


def test_a_run_whose_tests_pass_passes_with_no_note(
    user: User, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo's Coder writes greet.py and its test; its Tester runs it: 1 passed."""
    settings.ACODE_RUN_REQUIRE_TESTS_TIERS = DEFAULT_TIERS
    scripts = {r: [{**s, "delay": 0} for s in steps] for r, steps in demo.SCRIPTS.items()}
    monkeypatch.setattr(demo, "SCRIPTS", scripts)
    world = demo.demo_setup()
    run = drive(
        run_start(
            session=world.medium, request=demo.REQUEST, user=world.medium.owner, risk="medium"
        )
    )
    assert run.status == RunStatus.SUCCEEDED, (run.error_code, run.message)
    assert run.message == "All steps complete"
    evidence = run.stages.get(purpose="test").evidence
    assert (evidence["result"], evidence["status"]) == ("passed", "passed (exit 0)")
