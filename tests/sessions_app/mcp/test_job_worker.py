"""A scripted-model job in a role with an MCP tool, end to end through a real Celery worker:
the worker starts the server in the sandbox, the one check allows the call, the audit
keeps the decision and the outcome, and the model gets the answer marked untrusted."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from roles.models import McpServer, McpToolDefinition, Permission, Role
from roles.services import role_saved, role_write
from roles.services.mcp import mcp_tool_approve
from sessions_app.agent.mcp.servers import mcp_server_refresh
from sessions_app.models import (
    FINAL_JOB_STATUSES,
    AuditEvent,
    AuditEventType,
    JobEventKind,
    JobStatus,
)
from sessions_app.services.jobs import job_create
from tests.sessions_app.jobkit import scripted_model, session_in
from tests.sessions_app.mcp.conftest import needs_sandbox, running
from tests.sessions_app.runkit import calls
from tests.sessions_app.test_tasks import Worker, wait_for

pytestmark = [
    needs_sandbox,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"), reason="needs a Redis broker (make test provides one)"
    ),
]

TOOL = "mcp__canary__describe-me"


def test_a_scripted_job_calls_an_mcp_tool_through_a_celery_worker(
    canary: McpServer, user: Any, tmp_path: Path
) -> None:
    tag = f"job-{uuid.uuid4().hex}"
    canary.command = [*canary.command, tag]  # to find its process; the canary ignores it
    canary.save()
    mcp_server_refresh(server=canary)
    mcp_tool_approve(tool=McpToolDefinition.objects.get(server=canary, name="describe-me"))
    coder = Role.objects.get(slug="coder")
    coder.permissions.add(Permission.objects.get(code="mcp-canary"))
    role_saved(role=coder, actor="test")
    queue = f"test-mcp-{uuid.uuid4().hex[:8]}"
    role_write(data={"queue": queue}, create=False, slug="coder", actor="test")
    scripted_model("coder", [calls((TOOL, {"project": "acode"}), final="asked the tracker")])
    workspace = tmp_path / "ws"
    workspace.mkdir()
    worker = Worker(queue, tmp_path / "worker.log")
    try:
        job = job_create(
            session=session_in("coder", user, workspace=workspace), request="ask it", user=user
        )
        wait_for(job, FINAL_JOB_STATUSES, 90)
        deadline = time.monotonic() + 10
        while running(tag) and time.monotonic() < deadline:
            time.sleep(0.1)
        server_left_running = running(tag)  # the worker is still up: the job killed it
    finally:
        worker.stop()

    log = (tmp_path / "worker.log").read_text()[-3000:]
    assert job.status == JobStatus.SUCCEEDED, (job.error_code, job.error_message, log)
    assert not server_left_running
    result = job.events.get(kind=JobEventKind.TOOL_RESULT)
    assert result.data["status"] == "ok"
    assert result.data["output"].startswith(f'<untrusted-data source="{TOOL}" boundary=')
    assert "project acode" in result.data["output"]
    rows = list(
        AuditEvent.objects.filter(details__tool=TOOL)
        .order_by("id")
        .values_list("event_type", "result")
    )
    assert rows == [(AuditEventType.TOOL_DECISION, "allowed"), (AuditEventType.ROLE_ACTION, "ok")]
