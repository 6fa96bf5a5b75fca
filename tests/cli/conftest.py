"""Run the real ``acode`` CLI (typer's CliRunner) against a live test server."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rest_framework.authtoken.models import Token
from typer.testing import CliRunner, Result

from acode.cli import app

RunCli = Callable[..., Result]


def closed_port_url() -> str:
    """A URL on localhost where nothing listens (the port was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    return tmp_path / "acode-config"


@pytest.fixture
def token(user: Any) -> str:
    return Token.objects.create(user=user).key


@pytest.fixture
def admin_token(admin_user: Any) -> str:
    return Token.objects.create(user=admin_user).key


def make_runner(url: str, token: str, config_dir: Path) -> RunCli:
    def run(
        *args: str, env: dict[str, str | None] | None = None, input: str | None = None
    ) -> Result:
        base: dict[str, str | None] = {
            "ACODE_URL": url,
            "ACODE_TOKEN": token,
            "ACODE_CONFIG_DIR": str(config_dir),
            "ACODE_SESSION": None,
            "COLUMNS": "200",
            "NO_COLOR": "1",
        }
        return CliRunner().invoke(
            app, list(args), env={**base, **(env or {})}, input=input, prog_name="acode"
        )

    return run


@pytest.fixture
def cli(live_server: Any, token: str, config_dir: Path) -> RunCli:
    """The CLI as user ``dev`` against the live server."""
    return make_runner(live_server.url, token, config_dir)


@pytest.fixture
def admin_cli(live_server: Any, admin_token: str, config_dir: Path) -> RunCli:
    """The CLI as superuser ``boss`` against the live server."""
    return make_runner(live_server.url, admin_token, config_dir)


@pytest.fixture
def session_id(cli: RunCli) -> str:
    """A new session, made current for ``cli``."""
    result = cli("session", "new", "JWT auth", "--task", "Add JWT authentication", "--json")
    assert result.exit_code == 0, result.output
    return str(json.loads(result.stdout)["id"])
