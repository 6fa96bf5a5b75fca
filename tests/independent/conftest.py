"""Fixtures of the independent suite: acode's own secret in the server's environment, an
attack area (a workspace and a sentinel directory beside it), and the hostile server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roles.models import McpServer
from roles.services.mcp import mcp_server_save
from tests.independent.redkit import HOSTILE
from tests.sessions_app.agent.containment.kit import SECRET, Area, fingerprint


@pytest.fixture(autouse=True)
def _secret_and_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACODE_SANDBOX", raising=False)
    monkeypatch.setenv("ACODE_TEST_SECRET", SECRET)


@pytest.fixture
def area(tmp_path: Path) -> Area:
    ws = tmp_path / "ws"
    files = {
        "src/app.py": "x = 1\n",
        "docs/guide.md": "# Guide\n",
        "README.md": "# Project\n",
    }
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True)
    sentinel = tmp_path / "sentinel"
    (sentinel / "sub").mkdir(parents=True)
    (sentinel / "keep.txt").write_text("outside, do not touch\n")
    return Area(ws, sentinel, fingerprint(sentinel))


@pytest.fixture
def hostile(db: Any) -> McpServer:
    """The hostile server, run by this interpreter in the sandbox (its real prefix: a
    worktree's .venv may be a link to another checkout's)."""
    prefix = Path(sys.prefix).resolve()
    base = Path(sys.base_prefix).resolve()
    return mcp_server_save(
        server=McpServer(
            slug="hostile",
            command=[str(prefix / "bin" / "python"), str(HOSTILE)],
            read_only_paths=sorted({str(prefix), str(base), str(HOSTILE.parent)}),
            call_timeout_seconds=20,
        ),
        actor="test",
    )
