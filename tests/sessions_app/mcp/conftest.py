"""Real MCP servers for the tests: server-everything from npm (``make mcp-servers`` puts it
in var/mcp-servers) and the canary server beside this file, both run in the sandbox."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from roles.models import McpServer
from roles.services.mcp import mcp_server_save
from sessions_app.containment import sandbox_available

ROOT = Path(__file__).resolve().parents[3]
SERVERS = ROOT / "var" / "mcp-servers"
EVERYTHING = SERVERS / "node_modules" / "@modelcontextprotocol" / "server-everything"
CANARY = Path(__file__).with_name("canary_server.py")

STATUS = sandbox_available()
needs_sandbox = pytest.mark.skipif(
    not STATUS.available, reason=f"bubblewrap sandbox unavailable here: {STATUS.reason}"
)


@pytest.fixture(autouse=True)
def _sandbox_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACODE_SANDBOX", raising=False)


@pytest.fixture
def everything_entry() -> Path:
    """server-everything's entry point; the suite fails (not skips) when npm could install it."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("node and npm are not installed: server-everything cannot run here")
    entry = EVERYTHING / "dist" / "index.js"
    assert entry.is_file(), f"{entry} is missing: run `make mcp-servers`"
    return entry


@pytest.fixture
def make_server(db: Any) -> Callable[..., McpServer]:
    def make(slug: str, **fields: Any) -> McpServer:
        return mcp_server_save(server=McpServer(slug=slug, **fields), actor="test")

    return make


@pytest.fixture
def everything(make_server: Callable[..., McpServer], everything_entry: Path) -> McpServer:
    return make_server(
        "everything",
        command=["node", str(everything_entry), "stdio"],
        read_only_paths=[str(SERVERS)],
    )


@pytest.fixture
def canary(make_server: Callable[..., McpServer]) -> McpServer:
    """The canary server, run by this interpreter (its prefix and base mounted read-only)."""
    return make_server(
        "canary",
        command=[sys.executable, str(CANARY)],
        read_only_paths=sorted({sys.prefix, sys.base_prefix, str(CANARY.parent)}),
        call_timeout_seconds=5,
    )


def running(tag: str) -> bool:
    """Whether any process's command line carries ``tag`` (read from /proc, no tools)."""
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and tag.encode() in (entry / "cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False
