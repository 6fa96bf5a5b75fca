"""Scripted model servers for the real outside agents, on 127.0.0.1: the Anthropic
Messages API with streaming (Claude Code calls only ``POST /v1/messages``) and the OpenAI
Responses API with streaming (Codex's custom provider calls only ``POST /v1/responses``).

A script is a list of turns: ``("tool", name, input)`` asks for one tool call, ``("text",
words)`` ends. The turn answered is the number of tool results the request carries (so a
side request, such as a title, never moves the script on); ``before`` is called with a
turn's number before it is answered (a test changes a role there). Every request body is
kept, to assert what reached the model.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = tuple[Any, ...]


@dataclass
class Script:
    turns: list[Turn]
    before: Callable[[int], None] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
    answered: set[int] = field(default_factory=set)

    def turn(self, done: int) -> Turn:
        if self.before is not None and done not in self.answered:
            self.before(done)
        self.answered.add(done)
        return self.turns[min(done, len(self.turns) - 1)]


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


def _anthropic_done(body: dict[str, Any]) -> int:
    return sum(
        1
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )


def anthropic_stream(script: Script, body: dict[str, Any]) -> bytes:
    """One Messages API answer, streamed."""
    if not body.get("tools"):
        turn: Turn = ("text", "ok")
    else:
        done = _anthropic_done(body)
        turn = script.turn(done)
    number = len(script.requests)
    usage = {"input_tokens": 10, "output_tokens": 5}
    start = {"type": "message_start", "message": {
        "id": f"msg_{number}", "type": "message", "role": "assistant", "model": body.get("model", "m"),
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}  # fmt: skip
    if turn[0] == "tool":
        block = {"type": "tool_use", "id": f"toolu_{number:04d}", "name": turn[1], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(turn[2])}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": turn[1]}
        stop = "end_turn"
    return _sse([
        ("message_start", start),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ])  # fmt: skip


def responses_stream(script: Script, body: dict[str, Any]) -> bytes:
    """One Responses API answer, streamed."""
    items = body.get("input", [])
    done = sum(
        1 for item in items if isinstance(item, dict) and item.get("type") == "function_call_output"
    )
    turn = script.turn(done)
    number = len(script.requests)
    rid = f"resp_{number}"
    if turn[0] == "tool":
        item: dict[str, Any] = {"type": "function_call", "id": f"fc_{number}", "call_id": f"call_{number}",
                                "name": turn[1], "arguments": json.dumps(turn[2]), "status": "completed"}  # fmt: skip
    else:
        item = {"type": "message", "id": f"msg_{number}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": turn[1], "annotations": []}]}  # fmt: skip
    response = {
        "id": rid,
        "object": "response",
        "status": "in_progress",
        "output": [],
        "model": "m",
    }
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}  # fmt: skip
    completed = {**response, "status": "completed", "output": [item], "usage": usage}
    return _sse([
        ("response.created", {"type": "response.created", "response": response}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": completed}),
    ])  # fmt: skip


@contextmanager
def scripted_model(
    kind: str, turns: list[Turn], before: Callable[[int], None] | None = None
) -> Iterator[Script]:
    """``kind``: "anthropic" or "responses"."""
    script = Script(turns=turns, before=before)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) or b"{}"
            body = json.loads(raw)
            with lock:
                script.requests.append(body)
                if self.path.split("?")[0].rstrip("/").endswith("/messages"):
                    data = anthropic_stream(script, body)
                else:
                    data = responses_stream(script, body)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            data = json.dumps({"data": [], "models": []}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    script.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield script
    finally:
        server.shutdown()
        server.server_close()
