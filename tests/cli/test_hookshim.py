"""``acode hook codex``: acode's answer as Codex's exit status, and "deny" on any error of
the shim's own (acode unreachable, an error status, a non-JSON answer, its time limit)."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from acode.cli import hookshim
from tests.cli.conftest import closed_port_url

EVENT = {"session_id": "c", "cwd": "/tmp", "hook_event_name": "PreToolUse", "tool_name": "Bash",
         "tool_input": {"command": "ls"}}  # fmt: skip


@contextmanager
def answering(status: int, body: bytes, delay: float = 0.0) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            if delay:
                threading.Event().wait(delay)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def run(url: str, event: Any = EVENT, timeout: str = "5") -> tuple[int, str, str]:
    raw = event if isinstance(event, bytes) else json.dumps(event).encode()
    return hookshim.run(["codex", "--url", url, "--timeout", timeout], io.BytesIO(raw))


def test_allow_and_deny_are_exit_statuses() -> None:
    allow = json.dumps({"acode": {"outcome": "allow", "reason": "ok"}}).encode()
    with answering(200, allow) as url:
        assert run(url) == (0, "", "")
    deny = json.dumps({"acode": {"outcome": "deny", "reason": "acode: no (rule: shell)"}}).encode()
    with answering(200, deny) as url:
        assert run(url) == (2, "", "acode: no (rule: shell)")


@pytest.mark.parametrize(
    ("status", "body", "delay"),
    [(500, b"boom", 0.0), (401, b'{"code": "ACODE-API-401"}', 0.0), (200, b"<html>", 0.0),
     (200, b'{"hookSpecificOutput": {}}', 0.0), (200, b"{}", 3.0)],
)  # fmt: skip
def test_any_error_of_its_own_denies(status: int, body: bytes, delay: float) -> None:
    with answering(status, body, delay) as url:
        code, _, reason = run(url, timeout="1")
    assert code == 2 and "acode could not decide this call" in reason


def test_unreachable_and_unreadable_events_deny() -> None:
    assert run(closed_port_url())[0] == 2
    assert run(closed_port_url(), b"not json")[0] == 2


def test_an_event_that_decides_nothing_never_blocks() -> None:
    assert run(closed_port_url(), {**EVENT, "hook_event_name": "PostToolUse"}) == (0, "", "")


def test_acode_hook_codex_is_the_shim() -> None:
    from typer.testing import CliRunner

    from acode.cli import app

    result = CliRunner().invoke(
        app,
        ["hook", "codex", "--url", closed_port_url(), "--timeout", "3"],
        input=json.dumps(EVENT),
    )
    assert result.exit_code == 2 and "acode could not decide this call" in result.output
