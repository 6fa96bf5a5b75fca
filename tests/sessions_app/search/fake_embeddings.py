"""A scripted OpenAI-compatible ``/v1/embeddings`` server on 127.0.0.1 (the pattern of
``tests/fake_openai.py``): answers each input with the vector ``vector_of`` gives it and
records every request body."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeEmbeddings:
    vector_of: Callable[[str], list[float]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""


@contextmanager
def fake_embeddings(vector_of: Callable[[str], list[float]]) -> Iterator[FakeEmbeddings]:
    fake = FakeEmbeddings(vector_of)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            fake.requests.append(body)
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = [
                {"object": "embedding", "index": n, "embedding": fake.vector_of(text)}
                for n, text in reversed(list(enumerate(inputs)))  # any order: index says
            ]
            answer = {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }
            status = 200 if self.path.rstrip("/") == "/v1/embeddings" else 404
            encoded = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(encoded)))
            self.end_headers()
            self.wfile.write(encoded)

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
