from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import RunCli, make_runner

pytestmark = pytest.mark.django_db(transaction=True)


def test_login_with_token_saves_it_readable_only_by_the_user(
    live_server: Any, token: str, config_dir: Path
) -> None:
    cli = make_runner(live_server.url, "", config_dir)
    result = cli("login", "--token", token, env={"ACODE_TOKEN": None})
    assert result.exit_code == 0, result.output
    assert f"Logged in to {live_server.url} as dev" in result.stdout
    path = config_dir / "config.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    saved = json.loads(path.read_text())
    assert saved["url"] == live_server.url
    assert saved["servers"][live_server.url]["token"] == token

    # Later commands use the saved URL and token without any environment.
    whoami = cli("whoami", "--json", env={"ACODE_TOKEN": None, "ACODE_URL": None})
    assert whoami.exit_code == 0, whoami.output
    data = json.loads(whoami.stdout)
    assert (data["username"], data["token_source"], data["url_source"]) == (
        "dev",
        "config",
        "config",
    )


def test_login_with_a_bad_token_saves_nothing(live_server: Any, config_dir: Path) -> None:
    cli = make_runner(live_server.url, "", config_dir)
    result = cli("login", "--token", "not-a-token", env={"ACODE_TOKEN": None})
    assert result.exit_code == 5
    assert "ACODE-API-401" in result.stderr
    assert not (config_dir / "config.json").exists()


def test_password_login_exchanges_credentials_for_a_token(
    live_server: Any, user: Any, config_dir: Path
) -> None:
    cli = make_runner(live_server.url, "", config_dir)
    result = cli("login", input="dev\npw-dev-123\n", env={"ACODE_TOKEN": None})
    assert result.exit_code == 0, result.output
    assert "pw-dev-123" not in result.output  # the password is not echoed
    saved = json.loads((config_dir / "config.json").read_text())
    assert saved["servers"][live_server.url]["username"] == "dev"
    assert cli("roles", "list", env={"ACODE_TOKEN": None}).exit_code == 0


def test_password_login_with_wrong_password_is_an_auth_error(
    live_server: Any, user: Any, config_dir: Path
) -> None:
    cli = make_runner(live_server.url, "", config_dir)
    result = cli("login", "-u", "dev", input="wrong\n", env={"ACODE_TOKEN": None})
    assert result.exit_code == 5
    assert "Login failed" in result.stderr
    assert not (config_dir / "config.json").exists()


def test_logout_revokes_and_forgets_the_token(
    live_server: Any, token: str, config_dir: Path
) -> None:
    cli = make_runner(live_server.url, "", config_dir)
    assert cli("login", "--token", token, env={"ACODE_TOKEN": None}).exit_code == 0
    result = cli("logout", env={"ACODE_TOKEN": None})
    assert result.exit_code == 0
    assert "saved token was removed" in result.stdout
    after = cli("roles", "list", env={"ACODE_TOKEN": None})
    assert after.exit_code == 5
    assert "not logged in" in after.stderr
    revoked = cli("roles", "list", env={"ACODE_TOKEN": token})
    assert revoked.exit_code == 5 and "ACODE-API-401" in revoked.stderr


def test_whoami_names_the_user_and_sources(cli: RunCli, live_server: Any) -> None:
    result = cli("whoami")
    assert result.exit_code == 0, result.output
    assert f"Server: {live_server.url} (from ACODE_URL)" in result.stdout
    assert "User: dev" in result.stdout
    assert "Token: from ACODE_TOKEN" in result.stdout
