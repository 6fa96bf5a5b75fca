"""``acode job list|show|follow|cancel`` against the jobs API."""

from __future__ import annotations

import pytest

from sessions_app.agent.loop import run_job
from tests.cli.conftest import RunCli
from tests.sessions_app.jobkit import scripted_model

pytestmark = pytest.mark.django_db(transaction=True)


def queue_job(cli: RunCli, request: str = "Look around") -> str:
    result = cli("agent", request, "--no-wait", "--json")
    assert result.exit_code == 0, result.output
    import json

    return str(json.loads(result.stdout)["id"])


def test_job_list_show_follow_after_no_wait(cli: RunCli, session_id: str) -> None:
    scripted_model(
        "explorer",
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}
                ]
            },
            {"content": "Nothing to change here."},
        ],
    )
    cli("role", "set", "explorer", "--reason", "look")
    job_id = queue_job(cli)
    listed = cli("job", "list")
    assert listed.exit_code == 0 and job_id[:8] in listed.stdout and "queued" in listed.stdout
    run_job(job_id)  # what a worker does
    shown = cli("job", "show", job_id[:8])
    assert shown.exit_code == 0, shown.output
    assert "Status: succeeded" in shown.stdout
    assert "[ERROR] Tool 'write_file' is not available in current role: Explorer" in shown.stdout
    assert "Suggestion: Transition to Coder role to make file changes." in shown.stdout
    assert "Nothing to change here." in shown.stdout
    followed = cli("job", "follow", job_id, "--interval", "0.05")
    assert followed.exit_code == 0 and "succeeded in role explorer" in followed.stdout
    assert cli("job", "list", "--status", "running").stdout.startswith("No jobs")


def test_job_cancel_and_unknown_job(cli: RunCli, session_id: str) -> None:
    scripted_model("explorer", [{"content": "x"}])
    cli("role", "set", "explorer", "--reason", "look")
    job_id = queue_job(cli)
    cancelled = cli("job", "cancel", job_id[:8])
    assert cancelled.exit_code == 0 and "cancelled" in cancelled.stdout
    again = cli("job", "cancel", job_id)
    assert again.exit_code == 4 and "ACODE-JOB-006" in again.stderr
    unknown = cli("job", "show", "zzzz")
    assert unknown.exit_code == 3 and "Unknown job" in unknown.stderr


def test_job_resume_continues_a_stopped_job_with_a_fresh_budget(
    cli: RunCli, session_id: str
) -> None:
    looping = {"tool_calls": [{"name": "list_directory", "arguments": {"path": "."}}]}
    scripted_model("explorer", [[looping] * 3, [{"content": "Nothing here yet."}]])
    cli("role", "set", "explorer", "--reason", "look")
    job_id = queue_job(cli)
    assert run_job(job_id).status == "limit_exceeded"
    refused = cli("job", "resume", "ffffffff")
    assert refused.exit_code == 3
    resumed = cli("job", "resume", job_id[:8], "--no-wait", "--json")
    assert resumed.exit_code == 0, resumed.output
    import json

    new = json.loads(resumed.stdout)
    assert new["resumed_from"] == job_id and new["status"] == "queued"
    run_job(new["id"])
    shown = cli("job", "show", new["id"][:8])
    assert "Nothing here yet." in shown.stdout
    again = cli("job", "resume", new["id"])
    assert again.exit_code == 4 and "ACODE-JOB-013" in again.stderr
