"""After a denial the model sees the spec's text with its suggestion; a job that then fails
repeats the suggestion; the job's API shows both."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from acode.llm.providers import ScriptedProvider
from roles.selectors import endpoint_for
from sessions_app.agent.loop import run_job
from sessions_app.models import JobStatus
from sessions_app.services.jobs import job_create
from tests.sessions_app.jobkit import scripted_model, session_in

pytestmark = pytest.mark.django_db

FIRST_LINE = "[ERROR] Tool 'write_file' is not available in current role: Planner"
SUGGESTION = "Transition to Coder role to make file changes."


def test_planner_job_sees_the_suggestion_and_fails_saying_it(user: Any, api: APIClient) -> None:
    endpoint = scripted_model(
        "planner",
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "t.txt", "content": "x"}}
                ]
            },
            {"content": "I cannot write files here."},
        ],
    )
    session = session_in("planner", user, plan=False)
    job = job_create(session=session, request="Create test.txt with hello", user=user)
    provider = ScriptedProvider(endpoint_for(endpoint.name))
    done = run_job(job.pk, provider=provider)

    tool_result = provider.requests[1]["messages"][-1]
    assert tool_result["role"] == "tool"
    assert FIRST_LINE in tool_result["content"]
    assert f"Suggestion: {SUGGESTION}" in tool_result["content"]
    assert "  Constraint: Cannot modify files" in tool_result["content"]

    assert (done.status, done.error_code) == (JobStatus.FAILED, "ACODE-JOB-008")
    assert done.error_message.endswith(f"After a refused tool: {SUGGESTION}")

    body = api.get(f"/api/jobs/{job.pk}/").json()
    denied = [e["data"] for e in body["events"] if e["kind"] == "tool_denied"]
    assert denied[0]["reason"].startswith(FIRST_LINE)
    assert (denied[0]["code"], denied[0]["suggestion"]) == ("ACODE-ROL-003", SUGGESTION)
    assert SUGGESTION in body["error_message"]
