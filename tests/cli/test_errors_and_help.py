"""Exit codes, connection and auth failures, help and completion, the console script."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from acode.cli import app
from acode.cli.config import config_dir
from acode.cli.errors import ExitCode, exit_code_for
from acode.errors import ERROR_CODES
from tests.cli.conftest import RunCli, closed_port_url, make_runner

ROOT = Path(__file__).resolve().parent.parent.parent


def test_server_down_names_the_url_and_how_to_fix_it(tmp_path: Path) -> None:
    url = closed_port_url()
    cli = make_runner(url, "whatever", tmp_path)
    result = cli("roles", "list")
    assert result.exit_code == 6
    assert f"[ERROR] Cannot reach the acode server at {url}" in result.stderr
    assert f"GET {url}/api/roles/ failed" in result.stderr
    assert "ACODE_URL" in result.stderr and "make run" in result.stderr


def test_server_down_at_the_default_url_suggests_make_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = closed_port_url()
    monkeypatch.setattr("acode.cli.config.DEFAULT_URL", url)
    cli = make_runner("", "", tmp_path)
    result = cli("status", env={"ACODE_URL": None, "ACODE_TOKEN": None})
    assert result.exit_code == 6
    assert f"Is `make run` running? It serves on {url}." in result.stderr


def test_non_http_url_is_a_usage_error(tmp_path: Path) -> None:
    result = make_runner("ftp://example.com", "t", tmp_path)("roles", "list")
    assert result.exit_code == 2
    assert "not an http(s) URL" in result.stderr


@pytest.mark.django_db(transaction=True)
def test_bad_token_exits_5_with_advice(live_server: Any, tmp_path: Path) -> None:
    cli = make_runner(live_server.url, "not-a-token", tmp_path)
    result = cli("roles", "list")
    assert result.exit_code == 5
    assert "[ERROR] ACODE-API-401 Authentication required" in result.stderr
    assert "Invalid token." in result.stderr
    assert "The server refused the token in ACODE_TOKEN" in result.stderr


@pytest.mark.django_db(transaction=True)
def test_no_token_says_to_log_in(live_server: Any, tmp_path: Path) -> None:
    result = make_runner(live_server.url, "", tmp_path)("roles", "list", env={"ACODE_TOKEN": None})
    assert result.exit_code == 5
    assert f"You are not logged in to {live_server.url}. Run `acode login`" in result.stderr


@pytest.mark.django_db(transaction=True)
def test_url_option_overrides_acode_url(live_server: Any, token: str, tmp_path: Path) -> None:
    cli = make_runner(closed_port_url(), token, tmp_path)
    assert cli("roles", "list").exit_code == 6
    assert cli("--url", live_server.url, "roles", "list").exit_code == 0


@pytest.mark.django_db(transaction=True)
def test_missing_route_is_explained(cli: RunCli, live_server: Any) -> None:
    # An old server (or not an acode server at all) answers HTML 404s.
    result = cli("--url", live_server.url + "/nothing-here", "roles", "list")
    assert result.exit_code == 3
    assert "does not exist on the server" in result.stderr


def test_every_acode_code_has_an_exit_code_class() -> None:
    expected = {
        "ACODE-ROL-001": ExitCode.NOT_FOUND,
        "ACODE-ROL-002": ExitCode.REFUSED,
        "ACODE-ROL-003": ExitCode.AUTH,
        "ACODE-ROL-006": ExitCode.REFUSED,
        "ACODE-ROL-007": ExitCode.USAGE,
        "ACODE-PRM-002": ExitCode.NOT_FOUND,
        "ACODE-IMP-001": ExitCode.USAGE,
        "ACODE-API-401": ExitCode.AUTH,
        "ACODE-API-403": ExitCode.AUTH,
        "ACODE-API-404": ExitCode.NOT_FOUND,
        "ACODE-API-500": ExitCode.OTHER,
    }
    for code, exit_code in expected.items():
        assert exit_code_for(code, ERROR_CODES[code].http_status) == exit_code, code
    for entry in ERROR_CODES.values():
        assert exit_code_for(entry.code, entry.http_status) in ExitCode


def test_docs_exit_code_table_matches_the_cli() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    documented = {int(m) for m in re.findall(r"^\| `(\d+)` \|", text, flags=re.MULTILINE)}
    assert documented == {int(code) for code in ExitCode}


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in group.commands.items():
        path = (*prefix, name)
        if hasattr(command, "commands"):
            found += _commands(command, path)
        else:
            found.append(path)
    return found


def test_every_command_has_help_and_reports_errors_the_documented_way(tmp_path: Path) -> None:
    root: Any = typer.main.get_command(app)
    commands = _commands(root)
    assert {
        ("session", "new"),
        ("roles", "import"),
        ("role", "set"),
        ("tool", "list"),
        ("audit", "verify"),
        ("prompt-pack", "export"),
        ("context", "show"),
        ("agent",),
        ("status",),
        ("login",),
    } <= set(commands)
    cli = make_runner("http://127.0.0.1:9", "", tmp_path)
    for path in commands:
        result = cli(*path, "--help")
        assert result.exit_code == 0, path
        assert f"Usage: acode {' '.join(path)}" in result.stdout, path
        command: Any = root
        for part in path:
            command = command.commands[part]
        assert command.help, path
        # handles_errors wraps every command, so CliErrors become documented exit codes.
        assert hasattr(command.callback, "__wrapped__"), path
    top = cli("--help")
    for group in ("session", "roles", "role", "tool", "audit", "prompt-pack", "context", "agent"):
        assert group in top.stdout


def test_shell_completion_is_available(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shellingham

    # typer finds the user's shell by walking the process tree; under CI that tree is
    # make and pytest, so say it is bash.
    monkeypatch.setattr(shellingham, "detect_shell", lambda: ("bash", "/bin/bash"))
    run = make_runner("", "", tmp_path)
    script = run("--show-completion")
    assert script.exit_code == 0, script.output
    assert "_ACODE_COMPLETE=complete_bash" in script.stdout
    # What the installed script asks for when the user presses Tab after `acode sess`.
    completed = run(
        env={"_ACODE_COMPLETE": "complete_bash", "COMP_WORDS": "acode sess", "COMP_CWORD": "1"}
    )
    assert completed.stdout.split() == ["session"]


def test_config_dir_is_redirectable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACODE_CONFIG_DIR", str(tmp_path / "elsewhere"))
    assert config_dir() == tmp_path / "elsewhere"


def test_console_script_reports_a_down_server(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("acode")
    command = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from acode.cli import main; main()"]
    )
    url = closed_port_url()
    env = {
        **os.environ,
        "ACODE_URL": url,
        "ACODE_TOKEN": "t",
        "ACODE_CONFIG_DIR": str(tmp_path),
        "COLUMNS": "200",
    }
    done = subprocess.run(
        [*command, "role", "transitions", "--session", "00000000-0000-0000-0000-000000000000"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 6, done.stderr
    assert f"Cannot reach the acode server at {url}" in done.stderr
    version = subprocess.run(
        [*command, "--version"], env=env, capture_output=True, text=True, timeout=60
    )
    assert version.returncode == 0
    assert version.stdout.startswith("acode ")
