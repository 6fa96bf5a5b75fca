"""A scripted OpenAI-compatible server on 127.0.0.1, for tests at the LLM boundary that must
see what acode sends over HTTP (the JSON schema, the messages) and what the server says
about itself (its models, its context window)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeOpenAI:
    """Answers ``/v1/chat/completions`` with ``answers`` in turn (a string is the message's
    content; a dict is the message itself, e.g. with ``tool_calls``) and records each body."""

    answers: list[Any]
    models: list[dict[str, Any]] = field(default_factory=list)
    delay: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(body)
        if self.delay:
            time.sleep(self.delay)
        answer = self.answers[min(len(self.requests), len(self.answers)) - 1]
        message = answer if isinstance(answer, dict) else {"content": answer}
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": None, **message},
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }


@contextmanager
def fake_openai(
    answers: list[Any], *, models: list[dict[str, Any]] | None = None, delay: float = 0.0
) -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI(answers=answers, models=models or [], delay=delay)

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, data: Any) -> None:
            body = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": fake.models})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") == "/v1/chat/completions":
                self._send(200, fake.completion(body))
            else:
                self._send(404, {"error": "not found"})

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
