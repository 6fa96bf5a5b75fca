"""server-everything over streamable HTTP: reached at its registered URL, with headers
from named secrets, under the same pinning and the same policy as a stdio server."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from roles.models import McpServer, McpToolDefinition
from roles.services.mcp import mcp_tool_approve
from sessions_app.agent.mcp.servers import JobMcpServers, mcp_server_refresh
from sessions_app.containment import McpFailure

pytestmark = pytest.mark.django_db


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_url(everything_entry: Path, tmp_path: Path) -> Iterator[str]:
    """server-everything's streamable HTTP transport on a free local port."""
    port = _free_port()
    log = open(tmp_path / "http.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        ["node", str(everything_entry), "streamableHttp"],
        env={"PATH": os.environ["PATH"], "PORT": str(port)},
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(timeout=10)
        log.close()


def test_an_http_server_is_listed_pinned_and_called(
    make_server: Callable[..., McpServer], http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACKER_TOKEN", "Bearer t0ken")
    server = make_server(
        "remote",
        transport="http",
        url=http_url,
        header_secrets={"Authorization": "TRACKER_TOKEN"},
        allow_private_network=True,  # the test server listens on loopback
    )
    tools = mcp_server_refresh(server=server)
    assert "get-sum" in {t.name for t in tools}
    get_sum = mcp_tool_approve(tool=McpToolDefinition.objects.get(server=server, name="get-sum"))

    with JobMcpServers(workspace=None) as servers:
        result = servers.call(get_sum, {"a": 2, "b": 3})

    assert "5" in result.text and not result.is_error


def test_an_http_server_that_is_not_there_is_a_clean_error(
    make_server: Callable[..., Any],
) -> None:
    server = make_server(
        "gone",
        transport="http",
        url=f"http://127.0.0.1:{_free_port()}/mcp",
        allow_private_network=True,
    )

    with pytest.raises(McpFailure) as failure:
        mcp_server_refresh(server=server)

    assert failure.value.code == "ACODE-MCP-001"
    server.refresh_from_db()
    assert server.status == "error" and server.last_error
