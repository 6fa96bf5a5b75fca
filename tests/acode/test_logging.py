"""Log lines are JSON objects that say which request, job, session and role they are about."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from django.test import Client
from structlog.stdlib import ProcessorFormatter

from acode.logs import bind_log_context, formatter, restore_log_context
from sessions_app.permissions import session_for
from tests.sessions_app.jobkit import run, scripted_model, session_in

pytestmark = pytest.mark.django_db

Lines = Callable[[], list[dict[str, Any]]]


@contextlib.contextmanager
def _capture(kind: str) -> Iterator[Callable[[], str]]:
    """What the root handler writes, through the project's formatter of ``kind``."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter(kind))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield stream.getvalue
    finally:
        root.removeHandler(handler)


@pytest.fixture
def log_lines() -> Iterator[Lines]:
    with _capture("json") as text:
        yield lambda: [json.loads(line) for line in text().splitlines()]


@pytest.fixture
def console_text() -> Iterator[Callable[[], str]]:
    with _capture("console") as text:
        yield text


def test_every_handler_formats_through_structlog() -> None:
    configured = [h for h in logging.getLogger().handlers if h.get_name() == "console"]
    assert configured, "settings.LOGGING names a console handler on the root logger"
    assert all(isinstance(h.formatter, ProcessorFormatter) for h in configured)


def test_line_written_while_a_job_runs_names_job_session_and_role(
    user: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_lines: Lines
) -> None:
    # With the sandbox off, sandbox.py warns on every command: a plain stdlib logger line
    # written from inside a tool call of the job.
    monkeypatch.setenv("ACODE_SANDBOX", "off")
    scripted_model(
        "coder",
        [
            {"tool_calls": [{"name": "execute_command", "arguments": {"argv": ["python", "-c", "print(1)"]}}]},
            {"content": "done"},
        ],
    )  # fmt: skip
    session = session_in("coder", user, workspace=tmp_path)
    job = run(session, "run it", user)
    logging.getLogger("tests.after").warning("after the job")

    lines = log_lines()
    warning = next(line for line in lines if "UNSANDBOXED" in line["message"])
    assert warning["logger"] == "sessions_app.containment.sandbox"
    assert warning["level"] == "warning"
    assert warning["timestamp"].endswith("Z")
    assert (warning["job"], warning["session"], warning["role"]) == (
        str(job.pk),
        str(session.pk),
        "Coder",
    )
    after = next(line for line in lines if line["message"] == "after the job")
    assert "job" not in after, "the job's context ends with the job"
    assert (after["role"], after["session"]) == ("-", "-")


def test_a_request_about_a_session_logs_its_current_role(
    user: Any, console_text: Callable[[], str]
) -> None:
    session = session_in("planner", user, plan=False)
    outside = bind_log_context(request_id="r-1")
    try:
        session_for(user, session.pk)  # where every session view resolves its session
        logging.getLogger("tests.view").info("inside the view")
    finally:
        restore_log_context(outside)
    logging.getLogger("tests.view").info("after the request")
    text = re.sub(r"\x1b\[[0-9;]*m", "", console_text())
    inside, after = (line for line in text.splitlines() if "the view" in line or "after" in line)
    assert "role=Planner" in inside and f"session={session.pk}" in inside
    assert "role=-" in after and "session=-" in after


def test_django_request_line_carries_the_request_id(client: Client, log_lines: Lines) -> None:
    response = client.get("/api/no-such-thing/", HTTP_X_REQUEST_ID="req-obs-1")
    assert response.status_code == 404
    assert response["X-Request-ID"] == "req-obs-1"
    line = next(line for line in log_lines() if line["logger"] == "django.request")
    assert line["request_id"] == "req-obs-1"
    assert line["status_code"] == 404
    assert line["message"] == "Not Found: /api/no-such-thing/"


def test_pages_outside_the_api_get_a_request_id_for_their_lines(
    client: Client, log_lines: Lines
) -> None:
    client.get("/no-such-page/")
    line = next(line for line in log_lines() if line["logger"] == "django.request")
    assert len(line["request_id"]) == 32  # made up: the page answers no X-Request-ID


def test_structlog_lines_and_bound_context_share_the_format(log_lines: Lines) -> None:
    with structlog.contextvars.bound_contextvars(job="j1"):
        structlog.get_logger("tests.native").info("tool ran", tool="read_file")
    line = next(line for line in log_lines() if line["logger"] == "tests.native")
    assert line["message"] == "tool ran"
    assert (line["tool"], line["job"], line["level"]) == ("read_file", "j1", "info")


def test_exceptions_stay_on_one_json_line(log_lines: Lines) -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("tests.crash").exception("job crashed")
    line = next(line for line in log_lines() if line["logger"] == "tests.crash")
    assert "ValueError: boom" in line["exception"]


def test_console_format_is_readable_and_keeps_the_context(
    console_text: Callable[[], str],
) -> None:
    with structlog.contextvars.bound_contextvars(session="s-1", role="coder"):
        logging.getLogger("tests.console").info("hello %s", "there")
    text = re.sub(r"\x1b\[[0-9;]*m", "", console_text())  # colours, when run in a terminal
    assert "hello there" in text and "session=s-1" in text and "role=coder" in text
    assert not text.lstrip().startswith("{")


def test_beats_routine_tasks_stay_out_of_the_console_but_their_warnings_do_not() -> None:
    """The configured console handler leaves out Celery's info lines about the beat
    schedule's tasks (several every few seconds), keeps a job's, and keeps every warning."""
    configured = next(h for h in logging.getLogger().handlers if h.get_name() == "console")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter("json"))
    for kept in configured.filters:
        handler.addFilter(kept)
    trace, beat = logging.getLogger("celery.app.trace"), logging.getLogger("celery.beat")
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        beat.info(
            "Scheduler: Sending due task %s (%s)", "backlog-schedule", "acode.backlog_schedule"
        )
        trace.info("Task %(name)s[%(id)s] succeeded in %(runtime)ss: %(return_value)s",
                   {"name": "acode.backlog_schedule", "id": "1", "runtime": 0.01,
                    "return_value": []})  # fmt: skip
        trace.info("Task %(name)s[%(id)s] succeeded in %(runtime)ss: %(return_value)s",
                   {"name": "acode.run_job", "id": "2", "runtime": 3.2,
                    "return_value": None})  # fmt: skip
        trace.error("Task %(name)s[%(id)s] raised unexpected: %(exc)s",
                    {"name": "acode.recover_lost_jobs", "id": "3", "exc": "boom"})  # fmt: skip
    finally:
        root.removeHandler(handler)
    messages = [json.loads(line)["message"] for line in stream.getvalue().splitlines()]
    assert messages == ["Task acode.run_job[2] succeeded in 3.2s: None",
                        "Task acode.recover_lost_jobs[3] raised unexpected: boom"]  # fmt: skip
