"""The spec's Scenarios 4 and 10 end to end: the real ``acode`` CLI against a live server,
with every stage's job run by a real Celery worker process on a private queue and
scripted models at the LLM boundary."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from roles.services import role_write
from sessions_app.models import Run
from tests.cli.approvers import approver_runner
from tests.cli.conftest import RunCli
from tests.sessions_app import runkit
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import calls, review
from tests.sessions_app.test_tasks import Worker

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"), reason="needs a Redis broker (make test provides one)"
    ),
]

ROLES = ("default", "planner", "explorer", "coder", "tester", "reviewer")
REQUEST_4 = "Add JWT authentication to the API"
REQUEST_10 = "Add password validation to the User class"

JWT_PLAN = (
    '{"steps": [{"title": "Create AuthService for token generation", "files": '
    '["auth_service.py"]}, {"title": "Add login endpoint", "files": ["login.py"], '
    '"depends_on": [1]}]}'
)
SERVICE = "import time\n\n\ndef create_token(user: str) -> str:\n    return f'{user}.signed'\n"
SERVICE_WITH_EXPIRY = (
    "import time\n\n\ndef create_token(user: str, ttl: int = 3600) -> str:\n"
    "    return f'{user}.{int(time.time()) + ttl}.signed'\n"
)
SERVICE_TEST = (
    "from auth_service import create_token\n\n\ndef test_token_names_the_user() -> None:\n"
    "    assert create_token('ann').startswith('ann.')\n"
)
LOGIN = (
    "from auth_service import create_token\n\n\ndef login(user: str) -> dict[str, str]:\n"
    "    return {'token': create_token(user)}\n"
)

PLANNER_10 = """Plan: Add password validation to User class

Step 1: Add PasswordValidator class with validation rules
Step 2: Update User.SetPassword method to call validator
Step 3: Add unit tests for password validation
Step 4: Add integration test for user registration with invalid password

Dependencies: Step 1 must complete before Step 2
Estimated complexity: 1-2 hours"""
CODER_10 = """Insufficient Task Definition

The request is too vague for implementation. As Coder, I need specific instructions:
  - What validation rules? (min length, complexity requirements, etc.)
  - Where should validation occur? (setter, separate method, etc.)
  - What should happen on validation failure? (throw exception, return bool, etc.)

Suggestion: Run this request in Planner role first to create a detailed plan."""
VALIDATOR = "def valid_password(text: str) -> bool:\n    return len(text) >= 12\n"


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[Worker]:
    """One worker consuming a private queue that every role's jobs go to."""
    queue = f"test-{uuid.uuid4().hex[:8]}"
    for role in ROLES:
        role_write(data={"queue": queue}, create=False, slug=role, actor="test")
    started = Worker(queue, tmp_path / "worker.log")
    yield started
    started.stop()


@pytest.fixture
def approver_cli(live_server: Any, django_user_model: Any, config_dir: Path) -> RunCli:
    return approver_runner(live_server.url, django_user_model, config_dir)


def in_order(text: str, *parts: str) -> None:
    at = 0
    for part in parts:
        found = text.find(part, at)
        assert found >= 0, f"{part!r} not found after position {at} in:\n{text}"
        at = found + len(part)


def history_steps(output: str) -> list[str]:
    """``Default → Planner`` and the like from ``acode role history``."""
    return re.findall(r"^\d+\. \[[^\]]+\] (.+)$", output, flags=re.MULTILINE)


def script_scenario_4() -> None:
    scripted_model("planner", [[{"content": JWT_PLAN}]])
    scripted_model(
        "explorer", [[{"content": "No authentication code yet; the API has no login route."}]]
    )
    scripted_model(
        "coder",
        [
            calls(
                ("create_file", {"path": "auth_service.py", "content": SERVICE}),
                ("create_file", {"path": "test_auth_service.py", "content": SERVICE_TEST}),
                final="Created AuthService.create_token and its test",
            ),
            calls(
                ("write_file", {"path": "auth_service.py", "content": SERVICE_WITH_EXPIRY}),
                final="Tokens now carry an expiry",
            ),
            calls(
                ("create_file", {"path": "login.py", "content": LOGIN}),
                final="Added the login endpoint",
            ),
        ],
    )
    scripted_model("tester", [runkit.script_tester() for _ in range(3)])
    scripted_model(
        "reviewer",
        [
            review(
                "request_changes",
                "Tokens never expire",
                {"path": "auth_service.py", "line": 4, "body": "create_token needs an expiry"},
            ),
            review("approve", "AuthService signs tokens with an expiry"),
            review("approve", "The login endpoint returns a token"),
        ],
    )


def test_scenario_4_complete_workflow_with_role_transitions(
    cli: RunCli, approver_cli: RunCli, session_id: str, worker: Worker, user: Any
) -> None:
    # 1. Start in Default role.
    current = cli("role", "current")
    assert current.exit_code == 0 and "Current Role: Default" in current.stdout

    # 2-6. A complex request: the run plans, explores, then codes, tests and reviews each
    # step, shown live as the worker runs each stage's job.
    script_scenario_4()
    result = cli("run", REQUEST_4, "--interval", "0.2")
    log = worker.log.read_text()[-3000:]
    assert result.exit_code == 0, result.output + log
    run = Run.objects.get()
    rid = str(run.pk)[:8]
    in_order(
        result.stdout,
        f"Run {rid} started: high risk (declared low, raised by risk signals), template high, "
        "approval required",
        "[ROLE TRANSITION] Default → Planner (Reason: Planning the request (high risk))",
        "Step 1: Create AuthService for token generation",
        "Step 2: Add login endpoint",
        "Plan complete. 2 steps identified.",
        "[ROLE TRANSITION] Planner → Explorer (Reason: Exploring the codebase before coding)",
        "Findings: No authentication code yet",
        "[ROLE TRANSITION] Explorer → Coder (Reason: Executing plan step 1/2: Create "
        "AuthService for token generation)",
        "Pending changes: auth_service.py, test_auth_service.py",
        "[ROLE TRANSITION] Coder → Tester (Reason: Testing plan step 1/2)",
        "Tests: `python -m pytest -q`",
        "[ROLE TRANSITION] Tester → Reviewer (Reason: Verifying plan step 1/2 completion)",
        "✗ Changes requested. Tokens never expire",
        "  - auth_service.py:4: create_token needs an expiry",
        "[ROLE TRANSITION] Reviewer → Coder (Reason: Revising plan step 1/2: Create "
        "AuthService for token generation (revision 1))",
        "Coder: Tokens now carry an expiry",
        "[ROLE TRANSITION] Tester → Reviewer (Reason: Verifying plan step 1/2 completion)",
        "✅ Approved. AuthService signs tokens with an expiry",
        "[ROLE TRANSITION] Reviewer → Coder (Reason: Executing plan step 2/2: Add login endpoint)",
        "[ROLE TRANSITION] Coder → Tester (Reason: Testing plan step 2/2)",
        "[ROLE TRANSITION] Tester → Reviewer (Reason: Verifying plan step 2/2 completion)",
        "✅ Approved. The login endpoint returns a token",
        f"[APPROVAL NEEDED] Run {rid} waits for a person to approve 3 pending changes",
        "  - auth_service.py (created)",
        "  - login.py (created)",
        f"approves it with `acode run approve {rid}`",
    )
    assert "→ Default" not in result.stdout  # the session stays with the run at the gate

    # The starter cannot approve, even holding the permission; a second approver does.
    runkit.grant_approve(user)
    own = cli("run", "approve", rid)
    assert own.exit_code == 5 and "ACODE-RUN-009 Starter cannot approve" in own.stderr
    approved = approver_cli("run", "approve", rid, "--reason", "Reviewed the JWT changes")
    assert approved.exit_code == 0, approved.output
    in_order(
        approved.stdout,
        f"Approving run {rid}: {REQUEST_4}",
        "Pending changes (3):",
        f"[APPROVED] Run {rid} approved",
        f"[SUCCESS] Run {rid} succeeded: All steps complete",
    )

    # 7-9. Back in Default; the history shows the full sequence.
    current = cli("role", "current")
    assert "Current Role: Default" in current.stdout
    assert "Reason: All steps complete" in current.stdout
    history = cli("role", "history")
    assert history.exit_code == 0
    assert history_steps(history.stdout) == [
        "Default",
        "Default → Planner",
        "Planner → Explorer",
        "Explorer → Coder",
        "Coder → Tester",
        "Tester → Reviewer",
        "Reviewer → Coder",
        "Coder → Tester",
        "Tester → Reviewer",
        "Reviewer → Coder",
        "Coder → Tester",
        "Tester → Reviewer",
        "Reviewer → Default",
    ]
    # 10. Completed: the changes are committed, the plan is done.
    shown = cli("changes", "show").stdout
    assert shown.startswith("No pending changes.\n\nDelivered: 1 commit, newest first\n")
    assert f"on branch acode/{session_id}" in shown
    plan = cli("plan", "show").stdout
    assert "Plan: 2/2 steps complete" in plan
    assert any(
        "Approved by approver, in role " in body for body in runkit.branch_log(run, body=True)
    )


def test_scenario_10_same_request_different_roles(
    cli: RunCli, session_id: str, worker: Worker
) -> None:
    scripted_model("planner", [[{"content": PLANNER_10}]])
    scripted_model(
        "coder",
        [
            [{"content": CODER_10}],
            calls(
                ("create_file", {"path": "validators.py", "content": VALIDATOR}),
                final="Added valid_password (step 1 of the plan)",
            ),
        ],
    )
    scripted_model("reviewer", [[{"content": "should never be asked"}]])

    # 1-3. Planner: the request becomes a plan.
    entered = cli("role", "set", "Planner", "--reason", "Testing role-specific behavior")
    assert entered.exit_code == 0, entered.output
    planned = cli("agent", REQUEST_10, "--interval", "0.2")
    assert planned.exit_code == 0, planned.output + worker.log.read_text()[-3000:]
    in_order(
        planned.stdout,
        "Plan: Add password validation to User class",
        "Step 1: Add PasswordValidator class with validation rules",
        "Step 4: Add integration test for user registration with invalid password",
        "succeeded in role planner",
    )
    assert "Plan: 0/4 steps complete" in cli("plan", "show").stdout

    # 4-6. Coder: the same request is too vague to implement; nothing is changed.
    moved = cli("role", "set", "Coder", "--reason", "Testing same request in different role")
    assert moved.exit_code == 0, moved.output
    coded = cli("agent", REQUEST_10, "--interval", "0.2")
    assert coded.exit_code == 0, coded.output
    in_order(
        coded.stdout,
        "Insufficient Task Definition",
        "The request is too vague for implementation. As Coder, I need specific instructions:",
        "Suggestion: Run this request in Planner role first to create a detailed plan.",
        "succeeded in role coder",
    )
    assert cli("changes", "show").stdout.strip() == "No pending changes."

    # 7. With nothing implemented the Reviewer cannot even be entered.
    refused = cli("role", "set", "Reviewer", "--reason", "Testing same request")
    assert refused.exit_code == 4
    assert "ACODE-ROL-002" in refused.stderr
    assert "Reviewer role requires completed implementation to review" in refused.stderr

    # Implement step 1, review and approve it: the Reviewer is in force, nothing is pending.
    step_one = cli(
        "agent", "Implement plan step 1 with a 12-character minimum", "--interval", "0.2"
    )
    assert step_one.exit_code == 0, step_one.output
    assert "validators.py" in cli("changes", "show").stdout
    assert cli("role", "set", "Reviewer", "--reason", "Testing same request").exit_code == 0
    assert cli("changes", "approve", "--summary", "Password validator").exit_code == 0

    # 8-9. Reviewer: the same request has no changes to review.
    reviewed = cli("agent", REQUEST_10, "--interval", "0.2")
    assert reviewed.exit_code == 7
    assert "[ERROR] Job failed: ACODE-JOB-004 Nothing to review" in reviewed.stderr
    assert (
        "No changes to review: role Reviewer works on pending changes and the session has none."
    ) in reviewed.stderr
    assert "Suggestion: Make changes in Coder role first, then run Reviewer." in reviewed.stderr
    assert "failed in role reviewer · 0 LLM calls" in reviewed.stdout
