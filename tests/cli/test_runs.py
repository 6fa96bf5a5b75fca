"""``acode run`` against the runs API, with scripted models.

Jobs run eagerly inside the live server's request (as in test_agent_and_context), so a
run goes as far as it can during the POST that starts (or answers) it, and the CLI then
prints what happened; the worker-based, live version is tests/cli/test_scenarios_runs.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acode.celery import app as celery_app
from sessions_app.models import Job, Run
from sessions_app.services.jobs import job_start
from tests.cli.approvers import approver_runner
from tests.cli.conftest import RunCli
from tests.sessions_app import runkit
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import (
    FIRST,
    PLAN_ONE_STEP,
    calls,
    grant_approve,
    review,
    script_medium_run,
)

pytestmark = pytest.mark.django_db(transaction=True)

REVISE = review(
    "request_changes",
    "greet must take a name",
    {"path": "greet.py", "line": 1, "body": "greet() needs a name parameter"},
)
APPROVE = review("approve", "looks right")


@pytest.fixture
def eager_jobs() -> Iterator[None]:
    before = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = before


@pytest.fixture
def approver_cli(live_server: Any, django_user_model: Any, config_dir: Path) -> RunCli:
    return approver_runner(live_server.url, django_user_model, config_dir)


def in_order(text: str, *parts: str) -> None:
    """Each part occurs in ``text`` after the one before it."""
    at = 0
    for part in parts:
        found = text.find(part, at)
        assert found >= 0, f"{part!r} not found after position {at} in:\n{text}"
        at = found + len(part)


def only_run() -> Run:
    return Run.objects.get()


def test_run_shows_transitions_plan_evidence_and_verdicts_in_order(
    cli: RunCli, session_id: str, eager_jobs: None
) -> None:
    script_medium_run(reviews=[REVISE, APPROVE])
    result = cli("run", "Add a greeting helper", "--risk", "medium", "--interval", "0.05")
    assert result.exit_code == 0, result.output
    run = only_run()
    in_order(
        result.stdout,
        f"Run {str(run.pk)[:8]} started: medium risk, template medium",
        "[ROLE TRANSITION] Default → Planner (Reason: Planning the request (medium risk))",
        "Step 1: Add a greeting helper",
        "Plan complete. 1 step identified.",
        "[ROLE TRANSITION] Planner → Coder (Reason: Executing plan step 1/1: Add a greeting "
        "helper)",
        "Coder: created",
        "Pending changes: greet.py",
        "[ROLE TRANSITION] Coder → Tester (Reason: Testing plan step 1/1)",
        "Tests: `python -m pytest -q`",
        "[ROLE TRANSITION] Tester → Reviewer (Reason: Verifying plan step 1/1 completion)",
        "✗ Changes requested. greet must take a name",
        "  - greet.py:1: greet() needs a name parameter",
        "[ROLE TRANSITION] Reviewer → Coder (Reason: Revising plan step 1/1: Add a greeting "
        "helper (revision 1))",
        "Coder: revised",
        "✅ Approved. looks right",
        "[ROLE TRANSITION] Reviewer → Default (Reason: All steps complete)",
        f"[SUCCESS] Run {str(run.pk)[:8]} succeeded: All steps complete",
        "succeeded · medium risk · 7 stages",
    )
    assert result.stdout.count("[ROLE TRANSITION]") == 8
    history = cli("role", "history").stdout
    assert "Reviewer → Default" in history and "Reason: All steps complete" in history


def test_run_json_prints_only_the_final_run(cli: RunCli, session_id: str, eager_jobs: None) -> None:
    script_medium_run(reviews=[APPROVE])
    result = cli("run", "Add a greeting helper", "--risk", "medium", "--json", "--verbose")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "succeeded"
    assert [s["purpose"] for s in data["stages"]] == ["plan", "code", "test", "review"]
    assert "[ROLE TRANSITION] Default → Planner" in result.stderr  # progress on stderr
    # --verbose adds the tool calls of the stages' jobs.
    assert "⚙ create_file" in result.stderr and "⚙ submit_review" in result.stderr


def test_a_failed_run_exits_7_with_its_code(cli: RunCli, session_id: str, eager_jobs: None) -> None:
    scripted_model("planner", [[{"content": "I think we should probably add a helper."}]])
    runkit.other_reviewer()
    result = cli("run", "Add a greeting", "--risk", "medium", "--interval", "0.05")
    assert result.exit_code == 7
    assert "The plan stage in Planner failed." in result.stdout
    assert "[ROLE TRANSITION] Planner → Default (Reason: Run failed:" in result.stdout
    assert "[ERROR] Run failed: ACODE-JOB-008 Answer is not a plan" in result.stderr
    assert "Suggestion: A planning role's answer had no numbered steps" in result.stderr


def test_a_question_pauses_with_exit_0_and_the_answer_resumes_it(
    cli: RunCli, session_id: str, eager_jobs: None
) -> None:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model(
        "coder",
        [
            calls(("ask_human", {"question": "Which greeting language?"}), final="asked"),
            calls(("create_file", {"path": "greet.py", "content": FIRST}), final="ok"),
        ],
    )
    scripted_model("tester", [runkit.script_tester()])
    scripted_model("reviewer", [APPROVE])
    asked = cli("run", "Add a greeting", "--risk", "medium", "--interval", "0.05")
    assert asked.exit_code == 0, asked.output
    rid = str(only_run().pk)[:8]
    assert f"[QUESTION] Run {rid} waits for an answer: Which greeting language?" in asked.stdout
    assert f'Answer with `acode run answer {rid} "your answer"`' in asked.stdout

    listed = cli("run", "list", "--status", "awaiting_input")
    assert rid in listed.stdout and "waiting for an answer" in listed.stdout

    answered = cli("run", "answer", rid, "English", "--interval", "0.05")
    assert answered.exit_code == 0, answered.output
    out = answered.stdout
    in_order(
        out,
        f"Answered run {rid}: Which greeting language?",
        "→ English",
        "Pending changes: greet.py",
        "[ROLE TRANSITION] Coder → Tester",
        "✅ Approved. looks right",
        "[ROLE TRANSITION] Reviewer → Default (Reason: All steps complete)",
        f"[SUCCESS] Run {rid} succeeded",
    )
    assert "Default → Planner" not in out  # only what the answer set going
    shown = cli("run", "show", rid)
    assert "Question from coder: Which greeting language?" in shown.stdout
    assert "Answer by dev: English" in shown.stdout


def test_high_run_waits_for_another_approver_who_sees_what_is_approved(
    cli: RunCli, approver_cli: RunCli, session_id: str, eager_jobs: None, user: Any
) -> None:
    grant_approve(user)  # even with the permission, the starter may not approve
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("explorer", [[{"content": "greet.py does not exist yet."}]])
    scripted_model(
        "coder", [calls(("create_file", {"path": "greet.py", "content": FIRST}), final="ok")]
    )
    scripted_model("tester", [runkit.script_tester()])
    scripted_model("reviewer", [APPROVE])
    result = cli("run", "Add a greeting helper", "--risk", "high", "--interval", "0.05")
    assert result.exit_code == 0, result.output
    run = only_run()
    rid = str(run.pk)[:8]
    digest = run.approvals.get().digest
    in_order(
        result.stdout,
        "approval required",
        "[ROLE TRANSITION] Planner → Explorer (Reason: Exploring the codebase before coding)",
        "Findings: greet.py does not exist yet.",
        f"[APPROVAL NEEDED] Run {rid} waits for a person to approve 1 pending change (digest "
        f"{digest[:12]}",
        "  - greet.py (created)",
        f"Another person with the 'approve run' permission approves it with `acode run approve "
        f"{rid}`",
    )
    own = cli("run", "approve", rid)
    assert own.exit_code == 5 and "ACODE-RUN-009" in own.stderr
    wrong = approver_cli("run", "approve", rid, "--digest", "0" * 64)
    assert wrong.exit_code == 4 and "ACODE-RUN-011" in wrong.stderr

    approved = approver_cli("run", "approve", rid, "--reason", "checked the diff")
    assert approved.exit_code == 0, approved.output
    in_order(
        approved.stdout,
        f"Approving run {rid}: Add a greeting helper",
        f"Digest: {digest}",
        "Pending changes (1):",
        "  - greet.py (created)",
        f"[APPROVED] Run {rid} approved (digest {digest[:12]}).",
        f"[SUCCESS] Run {rid} succeeded: All steps complete",
    )
    again = approver_cli("run", "approve", rid)
    assert again.exit_code == 4 and "Nothing to approve" in again.stderr
    shown = cli("run", "show", rid)
    assert f"Approval {digest[:12]}: approved by approver" in shown.stdout
    assert "checked the diff" in shown.stdout
    assert "Reviewer → Default" in cli("role", "history").stdout


def test_reject_at_the_gate_ends_the_run(
    cli: RunCli, approver_cli: RunCli, session_id: str, eager_jobs: None
) -> None:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("explorer", [[{"content": "nothing there"}]])
    scripted_model(
        "coder", [calls(("create_file", {"path": "greet.py", "content": FIRST}), final="ok")]
    )
    scripted_model("tester", [runkit.script_tester()])
    scripted_model("reviewer", [APPROVE])
    assert cli("run", "Add a greeting helper", "--risk", "high", "--no-follow").exit_code == 0
    rid = str(only_run().pk)[:8]
    lacking = cli("run", "reject", rid, "--reason", "mine")  # without the permission
    assert "[ERROR] ACODE-RUN-008 Approval permission required" in lacking.stderr
    assert "Suggestion: Ask another person who holds it to decide; an admin grants it" in " ".join(
        lacking.stderr.split()
    )
    rejected = approver_cli("run", "reject", rid, "--reason", "not now")
    assert rejected.exit_code == 0, rejected.output
    assert f"Run {rid} rejected: not now" in rejected.stdout
    shown = cli("run", "show", rid)
    assert "Status: rejected — Rejected by approver: not now" in shown.stdout
    followed = cli("run", "follow", rid, "--interval", "0.05")
    assert followed.exit_code == 7 and "[ERROR] Run rejected" in followed.stderr
    assert "[ROLE TRANSITION] Default → Planner" in followed.stdout  # replayed from the start
    assert "greet.py" in cli("changes", "show").stdout  # still pending, uncommitted


@pytest.fixture
def jobs_never_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # No worker picks the stage's job up, so the run stays in its first stage.
    monkeypatch.setattr("sessions_app.services.jobs._enqueue", lambda job, queue: None)


def test_no_follow_list_show_and_cancel(
    cli: RunCli, session_id: str, jobs_never_start: None
) -> None:
    runkit.other_reviewer()
    started = cli("run", "Store the password hash", "--no-follow")
    assert started.exit_code == 0, started.output
    run = only_run()
    assert f"Run {run.pk} running (high risk, template high)." in started.stdout
    rid = str(run.pk)[:8]
    listed = cli("run", "list")
    assert rid in listed.stdout and "plan (Planner)" in listed.stdout
    shown = cli("run", "show", rid)
    assert "Risk: high (declared low); template high; approval required" in shown.stdout
    assert "signal security-words: request → high" in shown.stdout
    assert "1. plan in Planner: running" in shown.stdout

    busy = cli("run", "Something else", "--no-follow")
    assert busy.exit_code == 4 and "ACODE-RUN-002" in busy.stderr
    manual = cli("agent", "Do it by hand", "--no-wait")
    assert manual.exit_code == 4 and "ACODE-RUN-003" in manual.stderr
    assert Job.objects.count() == 1

    job_start(Job.objects.get().pk)  # a worker runs the Planner's job
    cancelled = cli("run", "cancel", rid)
    assert cancelled.exit_code == 0, cancelled.output
    assert f"Cancel requested for run {rid}; it stops when its current stage ends." in (
        cancelled.stdout
    )
    assert Run.objects.get().cancel_requested
    unknown = cli("run", "show", "zzzz")
    assert unknown.exit_code == 3 and "Unknown run" in unknown.stderr
    assert json.loads(cli("run", "list", "--json").stdout)[0]["id"] == str(run.pk)


def _interrupt(seconds: float) -> None:
    raise KeyboardInterrupt


def test_ctrl_c_offers_to_cancel_the_run(
    cli: RunCli, session_id: str, jobs_never_start: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("acode.cli.commands.run_follow.time.sleep", _interrupt)
    runkit.other_reviewer()
    result = cli("run", "Add a greeting", "--risk", "medium", input="y\n")
    assert result.exit_code == 130
    run = only_run()
    assert f"Cancel run {str(run.pk)[:8]}?" in result.stderr
    assert f"Cancel requested for run {run.pk}" in result.stdout
    assert run.cancel_requested


def test_an_unknown_template_is_refused_and_nothing_starts(
    cli: RunCli, session_id: str, jobs_never_start: None
) -> None:
    unknown = cli("run", "Add a greeting", "--template", "nope")
    assert unknown.exit_code == 3 and "ACODE-RUN-001" in unknown.stderr
    assert cli("run", "list").stdout.startswith("No runs.")
    no_session = cli("run", "Add a greeting", env={"ACODE_CONFIG_DIR": "/nonexistent-acode"})
    assert no_session.exit_code == 2 and "No session selected." in no_session.stderr
