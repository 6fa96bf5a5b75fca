"""``acode agents connect``: the hook settings it writes, with a hook token of the user."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sessions_app.models import HookToken
from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)


def test_claude_code_project_settings_fail_closed(cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"model": "opus", "hooks": {"Stop": []}}')
    result = cli("agents", "connect", "claude-code", "--project", str(tmp_path), "--role", "coder")
    assert result.exit_code == 0, result.output
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert settings["model"] == "opus" and "Stop" in settings["hooks"]  # kept
    hook = settings["hooks"]["PreToolUse"][0]["hooks"][0]
    assert hook["type"] == "http" and hook["url"].endswith("/api/hooks/claude-code/")
    assert hook["onFailure"] == "block" and hook["allowedEnvVars"] == ["ACODE_HOOK_TOKEN"]
    assert hook["headers"]["Authorization"] == "Bearer $ACODE_HOOK_TOKEN"
    assert hook["headers"]["X-Acode-Machine"] == os.uname().nodename
    key = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())["env"][
        "ACODE_HOOK_TOKEN"
    ]
    token = HookToken.objects.get()
    assert key.startswith(token.prefix) and token.role is not None and token.role.slug == "coder"


def test_claude_code_managed_settings(cli: RunCli, tmp_path: Path) -> None:
    managed = tmp_path / "managed-settings.json"
    result = cli("agents", "connect", "claude-code", "--managed", str(managed))
    assert result.exit_code == 0, result.output
    settings = json.loads(managed.read_text())
    assert settings["allowManagedHooksOnly"] is True
    assert settings["allowedHttpHookUrls"][0].endswith("/api/hooks/*")
    assert "ACODE_HOOK_TOKEN=acodehk_" in result.output


def test_codex_without_codex_says_the_hooks_are_not_trusted(cli: RunCli, tmp_path: Path) -> None:
    result = cli("agents", "connect", "codex", "--codex-home", str(tmp_path), "--codex",
                 str(tmp_path / "no-codex"))  # fmt: skip
    assert result.exit_code != 0 and "not trusted" in result.output
    config = (tmp_path / "config.toml").read_text()
    assert "[[hooks.PreToolUse]]" in config and "hookshim.py codex" in config
    assert (tmp_path / "acode-hook-token").stat().st_mode & 0o777 == 0o600


def test_an_unknown_agent_is_refused(cli: RunCli) -> None:
    result = cli("agents", "connect", "cursor")
    assert result.exit_code != 0 and "claude-code or codex" in result.output
