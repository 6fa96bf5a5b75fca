"""Oversized request bodies are refused before they are read, by the real servers: daphne as
``make run`` starts it (``acode.devserver.web_command``) and uvicorn.

Each server runs once for the module, against this run's test database.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from acode.devserver import web_command
from acode.embedded import free_port, stop_process, wait_for_port
from tests.conftest import ROOT, shared_database_url

pytestmark = pytest.mark.slow

LIMIT = 2 * 1024 * 1024  # ACODE_MAX_BODY_BYTES's default
SERVERS = {
    "daphne": lambda port: web_command("127.0.0.1", port),
    "uvicorn": lambda port: [
        *(sys.executable, "-m", "uvicorn", "acode.asgi:application"),
        *("--host", "127.0.0.1", "--port", str(port), "--no-access-log"),
    ],
}


@pytest.fixture(scope="module", params=sorted(SERVERS))
def server(
    request: pytest.FixtureRequest,
    django_db_setup: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[int]:
    """The server's port; it serves ``acode.asgi`` against the test database."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": shared_database_url(),
        "DJANGO_SETTINGS_MODULE": "acode.settings",
        "ACODE_DEBUG": "0",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    log: Path = tmp_path_factory.mktemp("server") / f"{request.param}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            SERVERS[request.param](port), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
        try:
            wait_for_port(port, timeout=60)
        except RuntimeError:
            stop_process(proc)
            raise RuntimeError(f"{request.param} did not start:\n{log.read_text()}") from None
        try:
            yield port
        finally:
            stop_process(proc)


def head(port: int, length: int | None, path: str = "/api/sessions/") -> bytes:
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nX-Request-ID: too-big-1\r\n{framing}\r\n\r\n"
    ).encode()


def read_answer(sock: socket.socket, timeout: float) -> tuple[bytes, dict[str, str], bytes]:
    """Status line, headers and body of one response (its Content-Length says how long)."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before an answer: {data!r}")
        data += chunk
    top, rest = data.split(b"\r\n\r\n", 1)
    status, *lines = top.split(b"\r\n")
    headers = {
        k.strip().lower(): v.strip()
        for k, v in (line.decode("latin-1").split(":", 1) for line in lines)
    }
    while len(rest) < int(headers["content-length"]):
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, headers, rest


def assert_refused(status: bytes, headers: dict[str, str], body: bytes) -> None:
    assert status.startswith(b"HTTP/1.1 413"), status
    assert headers["content-type"] == "application/json"
    assert headers["connection"].lower() == "close"
    assert headers["x-request-id"] == "too-big-1"
    answer = json.loads(body)
    assert answer["code"] == "ACODE-API-413"
    assert answer["details"] == {"limit": LIMIT}
    assert answer["request_id"] == "too-big-1"


@pytest.mark.parametrize("sent", [b"", b'{"title":'])
def test_a_declared_terabyte_is_answered_413_within_a_second(server: int, sent: bytes) -> None:
    with socket.create_connection(("127.0.0.1", server)) as sock:
        started = time.monotonic()
        sock.sendall(head(server, 10**12) + sent)
        status, headers, body = read_answer(sock, timeout=1.0)
        assert time.monotonic() - started < 1.0
        assert_refused(status, headers, body)
        assert "10000000000000 bytes" not in body.decode()
        assert "1000000000000 bytes" in json.loads(body)["message"]
        # The server closes the connection: it will not read the rest.
        sock.settimeout(5)
        assert sock.recv(65536) == b""


def _send_all(sock: socket.socket, total: int, sent: list[int]) -> None:
    chunk = b"x" * 65536
    try:
        while sent[0] < total:
            sent[0] += sock.send(chunk[: total - sent[0]])
    except OSError:
        pass  # the server stopped reading and closed the connection


def test_a_30_mb_body_is_not_read_whole(server: int) -> None:
    total = 30 * 1024 * 1024
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(head(server, total))
        sent = [0]
        sender = threading.Thread(target=_send_all, args=(sock, total, sent), daemon=True)
        started = time.monotonic()
        sender.start()
        status, headers, body = read_answer(sock, timeout=1.0)
        assert time.monotonic() - started < 1.0
        assert_refused(status, headers, body)
        sender.join(timeout=30)
        assert not sender.is_alive()
    assert sent[0] < total, "the whole body went through: the server read it"


def test_a_chunked_body_is_refused_once_it_passes_the_limit(server: int) -> None:
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(head(server, None))
        chunk = b"x" * 65536
        framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        sent = 0
        try:
            while sent < 15 * LIMIT:
                sock.sendall(framed)
                sent += len(chunk)
        except OSError:
            pass
        status, headers, body = read_answer(sock, timeout=5.0)
        assert_refused(status, headers, body)
        assert "is longer than that" in json.loads(body)["message"]
    assert sent < 15 * LIMIT


def test_bodies_within_the_limit_reach_the_application(server: int) -> None:
    login: dict[str, Any] = {"username": "nobody", "password": "not-a-password"}
    with httpx.Client(base_url=f"http://127.0.0.1:{server}", timeout=30) as client:
        plain = client.post("/api/auth/token/", json=login)
        assert plain.status_code == 401 and plain.json()["code"] == "ACODE-API-401"
        # Chunked (no Content-Length): counted as it streams, then read as usual.
        streamed = client.post(
            "/api/auth/token/",
            content=iter([json.dumps(login).encode()]),
            headers={"Content-Type": "application/json"},
        )
        assert "content-length" not in streamed.request.headers
        assert streamed.status_code == 401 and streamed.json()["code"] == "ACODE-API-401"


def test_outside_the_api_the_refusal_is_plain_text(server: int) -> None:
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(head(server, 10**9, path="/accounts/login/"))
        status, headers, body = read_answer(sock, timeout=1.0)
    assert status.startswith(b"HTTP/1.1 413")
    assert headers["content-type"].startswith("text/plain")
    assert b"the limit is 2097152" in body
