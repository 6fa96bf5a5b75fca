"""``acode agent`` and ``acode context show`` against the jobs API, with scripted models."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from acode.celery import app as celery_app
from sessions_app.models import Job
from tests.cli.conftest import RunCli
from tests.sessions_app.jobkit import scripted_model

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def eager_jobs() -> Iterator[None]:
    # Run jobs inside the live server's request instead of on a Celery worker.
    before = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = before


def write_file(name: str, arguments: dict[str, str]) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_agent_role_shows_transition_denials_and_the_result(cli: RunCli, session_id: str) -> None:
    scripted_model(
        "planner",
        [
            write_file("write_file", {"path": "test.txt", "content": "hello"}),
            {"content": '{"steps": [{"title": "Create AuthService"}, {"title": "Add login"}]}'},
        ],
    )
    result = cli("agent", "Add JWT authentication", "--role", "Planner", "--interval", "0.05")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "[ROLE TRANSITION] Default → Planner (Reason: acode agent --role Planner)" in out
    assert "[ERROR] Tool 'write_file' is not available in current role: Planner\n" in out
    assert "  Constraint: Cannot modify files\n" in out
    assert "Suggestion: Transition to Coder role to make file changes.\n" in out
    assert "Details: missing permission write_files. (ACODE-ROL-003)" in out
    assert "⚙ write_file" in out
    assert '"title": "Create AuthService"' in out
    assert "succeeded in role planner · 2 LLM calls" in out
    assert "Active Plan: 0/2 steps complete" in cli("status").stdout
    audited = cli("audit", "search", "--event-type", "ToolDenied").stdout
    assert (
        "  Reason: [ERROR] Tool 'write_file' is not available in current role: Planner "
        "Suggestion: Transition to Coder role to make file changes.\n"
    ) in audited


def test_agent_failure_exits_7_with_the_job_error(cli: RunCli, session_id: str) -> None:
    scripted_model("explorer", [{"error": "connection"}])
    cli("role", "set", "explorer", "--reason", "look around")
    result = cli("agent", "What is here?", "--interval", "0.05")
    assert result.exit_code == 7
    assert "[ERROR] Job failed: ACODE-JOB-003 No model endpoint answered" in result.stderr
    assert "acode model check" in result.stderr


def test_agent_json_prints_only_the_final_job(cli: RunCli, session_id: str) -> None:
    scripted_model("default", [{"content": "Hello there."}])
    result = cli("agent", "Say hello", "--json", "--interval", "0.05")
    assert result.exit_code == 0, result.output
    job = json.loads(result.stdout)
    assert (job["status"], job["result"], job["role"]) == ("succeeded", "Hello there.", "default")


def test_agent_no_wait_returns_the_job_id(cli: RunCli, session_id: str) -> None:
    scripted_model("default", [{"content": "Later."}])
    result = cli("agent", "Do it later", "--no-wait")
    assert result.exit_code == 0, result.output
    job = Job.objects.get()
    assert f"Job {job.pk} queued in role default." in result.stdout
    assert f"/api/jobs/{job.pk}/" in result.stdout


def test_agent_refused_role_exits_4_and_creates_no_job(cli: RunCli, session_id: str) -> None:
    result = cli("agent", "Review it", "--role", "reviewer")
    assert result.exit_code == 4
    assert "ACODE-ROL-002" in result.stderr
    assert not Job.objects.exists()


def test_scenario_8_context_show_lists_files_and_strategy(cli: RunCli, session_id: str) -> None:
    session = json.loads(cli("session", "show", "--json").stdout)
    workspace = Path(session["workspace"])
    (workspace / "src").mkdir()
    (workspace / "src" / "auth.py").write_text("def token() -> str:\n    return 'x'\n")
    cli("role", "set", "planner", "--reason", "Testing context")
    result = cli("context", "show", "--task", "Implement token generation")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Context for Role: Planner" in out
    assert "Strategy: broad" in out
    assert "Token Count: " in out
    assert "src/auth.py (" in out
    data = json.loads(cli("context", "show", "--role", "coder", "--json").stdout)
    assert data["role"] == "Coder"
    assert data["strategy"] == "focused"


@pytest.fixture
def job_never_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    # No worker picks the job up, so it stays queued while the CLI follows it.
    monkeypatch.setattr("sessions_app.services.jobs._enqueue", lambda job, queue: None)


def interrupt(seconds: float) -> None:
    raise KeyboardInterrupt


def test_ctrl_c_offers_to_cancel_the_job(
    cli: RunCli, session_id: str, job_never_starts: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("acode.cli.commands.agent.time.sleep", interrupt)
    result = cli("agent", "Take your time", input="y\n")
    assert result.exit_code == 130
    job = Job.objects.get()
    assert f"Cancel job {str(job.pk)[:8]}?" in result.stderr
    assert f"Cancel requested for job {job.pk}" in result.stdout
    assert job.status == "cancelled"


def test_ctrl_c_can_leave_the_job_running(
    cli: RunCli, session_id: str, job_never_starts: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("acode.cli.commands.agent.time.sleep", interrupt)
    result = cli("agent", "Take your time", input="n\n")
    assert result.exit_code == 130
    job = Job.objects.get()
    assert f"Job {job.pk} keeps running" in result.stdout
    assert job.status == "queued"


def test_status_lists_active_jobs(cli: RunCli, session_id: str, job_never_starts: None) -> None:
    assert cli("agent", "Queue me", "--no-wait").exit_code == 0
    result = cli("status")
    assert "Jobs: 1 queued or running" in result.stdout
    assert "queued in default: Queue me" in result.stdout
