"""The real Claude Code and Codex, installed from npm (``make mcp-servers`` puts them in
var/mcp-servers), each against a scripted model server, with acode's hooks as
``acode agents connect`` writes them. Asserted on the file system (denied calls did not
run, allowed ones did) and in acode (every call audited with its rule, the session on the
board, a role change on the dashboard in force on the next call)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import LazySettings
from django.db import connection
from django.test import Client
from rest_framework.authtoken.models import Token

from sessions_app.models import AuditEvent, OutsideSession, ToolConsent
from sessions_app.services.consents import tool_consent_answer
from tests.cli.conftest import make_runner
from tests.sessions_app.outside.kit import limited_coder, mcp_echo_limited
from tests.sessions_app.outside.scripted_models import scripted_model

BIN = Path(__file__).resolve().parents[3] / "var" / "mcp-servers" / "node_modules" / ".bin"
EVERYTHING = BIN.parent / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
SECRET = "s3cr3t-value-5521"


def _needs(name: str) -> Any:
    return pytest.mark.skipif(
        not (BIN / name).exists(),
        reason=f"{BIN / name} is missing: run `make mcp-servers` (needs npm) to install it",
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('app')\n")
    (root / ".env").write_text(f"TOKEN={SECRET}\n")
    return root


def _env(home: Path, **extra: str) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": os.environ["PATH"], "HOME": str(home), **extra}


def _audited(agent: str) -> list[tuple[str, str, str]]:
    outside = OutsideSession.objects.get(agent=agent)
    rows = AuditEvent.objects.filter(session_id=outside.session_id).order_by("seq")
    return [
        (r.event_type, r.details.get("agent_tool", ""), str(r.details.get("rule", "")))
        for r in rows
    ]


def _role_change_before(turn: int, owner: Any, agent: str) -> Any:
    """Before the model's turn ``turn``: a person moves the session to the Tester on the
    dashboard."""

    def before(done: int) -> None:
        if done != turn:
            return
        session = OutsideSession.objects.get(agent=agent).session
        client = Client()
        client.force_login(owner)
        page = client.post(f"/sessions/{session.pk}/transition/",
                           {"to_role": "tester", "reason": "tests only now"})  # fmt: skip
        assert page.status_code in (200, 302)
        connection.close()  # this thread's own: the test database is dropped afterwards

    return before


@_needs("claude")
def test_claude_code_asks_acode_before_every_call(
    live_server: Any, user: Any, project: Path, tmp_path: Path
) -> None:
    limited_coder()
    mcp_echo_limited()
    cli = make_runner(live_server.url, Token.objects.create(user=user).key, tmp_path / "cfg")
    result = cli("agents", "connect", "claude-code", "--project", str(project), "--role", "coder")
    assert result.exit_code == 0, result.output
    turns = [
        ("tool", "Read", {"file_path": str(project / "src/app.py")}),
        ("tool", "Write", {"file_path": str(project / "setup.py"), "content": "x"}),
        ("tool", "Bash", {"command": "ls src && cp src/app.py stolen.py", "description": "list"}),
        ("tool", "Read", {"file_path": str(project / ".env")}),
        ("tool", "mcp__everything__echo", {"message": "a message past the role's limit"}),
        ("tool", "Bash", {"command": "touch src/asked.py", "description": "touch"}),
        ("tool", "Write", {"file_path": str(project / "src/ok.py"), "content": "ok = 1\n"}),
        ("tool", "Write", {"file_path": str(project / "src/late.py"), "content": "x"}),
        ("text", "done"),
    ]
    mcp = {"mcpServers": {"everything": {"command": "node", "args": [str(EVERYTHING), "stdio"]}}}
    (tmp_path / "mcp.json").write_text(json.dumps(mcp))
    with scripted_model(
        "anthropic", turns, before=_role_change_before(7, user, "claude-code")
    ) as model:
        env = _env(tmp_path / "home", ANTHROPIC_BASE_URL=model.base_url, ANTHROPIC_API_KEY="dummy",
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
                   DISABLE_AUTOUPDATER="1")  # fmt: skip
        done = subprocess.run(
            [str(BIN / "claude"), "-p", "Work on the app", "--output-format", "json",
             "--mcp-config", str(tmp_path / "mcp.json")],
            cwd=project, env=env, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    denied = {d["tool_name"] for d in json.loads(done.stdout)["permission_denials"]}
    assert {"Write", "Bash", "Read", "mcp__everything__echo"} <= denied
    # On the file system: what was denied did not run, what was allowed did.
    assert not (project / "setup.py").exists() and not (project / "stolen.py").exists()
    assert not (project / "src/asked.py").exists() and not (project / "src/late.py").exists()
    assert (project / "src/ok.py").read_text() == "ok = 1\n"
    assert SECRET not in json.dumps(model.requests)
    # In acode: each call with the rule that decided it, in order.
    decided = [(kind, tool, rule) for kind, tool, rule in _audited("claude-code")
               if kind in ("ToolDecision", "ToolDenied", "ToolConsent")]  # fmt: skip
    assert [(kind, tool) for kind, tool, _ in decided] == [
        ("ToolDecision", "Read"), ("ToolDenied", "Write"), ("ToolDenied", "Bash"),
        ("ToolDenied", "Read"), ("ToolDenied", "mcp__everything__echo"), ("ToolConsent", "Bash"),
        ("ToolDecision", "Write"), ("ToolDenied", "Write"),
    ]  # fmt: skip
    rules = [rule for _, _, rule in decided]
    assert rules[1] == "write_paths" and rules[3] == "secrets" and "argument_limits" in rules[4]
    assert rules[2].startswith("command_rules") or rules[2] == "command_patterns", rules
    assert rules[7] == "effective_tools"  # the Tester has no write tool: the change held
    assert ("RoleAction", "Read", "") in _audited("claude-code")  # PostToolUse: the outcome
    board = Client()
    board.force_login(user)
    page = board.get("/").content.decode()
    assert "Claude Code in project" in page  # the card names the agent's kind
    assert OutsideSession.objects.get(agent="claude-code").machine == os.uname().nodename


@_needs("codex")
def test_codex_asks_acode_through_the_shim(
    live_server: Any, user: Any, project: Path, tmp_path: Path, settings: LazySettings
) -> None:
    settings.ACODE_HOOK_ASK_SECONDS = 20.0
    settings.ACODE_CONSENT_POLL_SECONDS = 0.1
    limited_coder()
    home = tmp_path / "codex-home"
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    origin = "https://dev:hunter2@example.com/team/app.git"
    subprocess.run(["git", "-C", str(project), "remote", "add", "origin", origin], check=True)
    turns = [
        ("tool", "exec_command", {"cmd": "cat src/app.py"}),
        ("tool", "exec_command", {"cmd": "echo hi > setup.py"}),
        ("tool", "exec_command", {"cmd": "ls src && cp src/app.py stolen.py"}),
        ("tool", "exec_command", {"cmd": "cat .env"}),
        ("tool", "exec_command", {"cmd": "touch src/held.py"}),
        ("text", "done"),
    ]
    answered: list[str] = []

    def answer_pending() -> None:  # a person allows the held call on the dashboard
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not answered:
            pending = ToolConsent.objects.filter(status="pending").select_related("session").first()
            if pending is not None:
                tool_consent_answer(
                    consent_id=pending.pk, session=pending.session, user=user, allow=True
                )
                answered.append(str(pending.pk))
            time.sleep(0.2)
        connection.close()

    with scripted_model("responses", turns) as model:
        (home / "config.toml").write_text(
            'model = "scripted"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\n'
            f'name = "scripted"\nbase_url = "{model.base_url}/v1"\nwire_api = "responses"\n'
            'env_key = "SCRIPTED_KEY"\n'
        )
        cli = make_runner(live_server.url, Token.objects.create(user=user).key, tmp_path / "cfg")
        result = cli("agents", "connect", "codex", "--codex-home", str(home), "--project",
                     str(project), "--role", "coder", "--codex", str(BIN / "codex"))  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "trusts acode's 3 hooks" in result.output
        person = threading.Thread(target=answer_pending, daemon=True)
        person.start()
        done = subprocess.run(
            [str(BIN / "codex"), "exec", "--skip-git-repo-check", "-s", "danger-full-access",
             "Work on the app"],
            cwd=project, env=_env(tmp_path / "home", CODEX_HOME=str(home), SCRIPTED_KEY="dummy"),
            capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        person.join(timeout=5)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (project / "setup.py").exists() and not (project / "stolen.py").exists()
    assert (project / "src/held.py").exists() and answered  # allowed by a person, then ran
    assert SECRET not in json.dumps(model.requests)
    decided = [(kind, rule) for kind, tool, rule in _audited("codex")
               if kind in ("ToolDecision", "ToolDenied", "ToolConsent")]  # fmt: skip
    assert [kind for kind, _ in decided] == [
        "ToolDecision",
        "ToolDenied",
        "ToolDenied",
        "ToolDenied",
        "ToolConsent",
        "ToolConsent",
    ], decided  # the hooks ran: Codex trusted them without --dangerously-bypass-hook-trust
    assert decided[1][1] == "write_paths" and decided[3][1] == "secrets"
    outside = OutsideSession.objects.get(agent="codex")
    assert outside.repository == "https://example.com/team/app.git"  # no credentials
    assert outside.machine == socket.gethostname()


@_needs("claude")
def test_claude_code_blocks_when_acode_is_unreachable(project: Path, tmp_path: Path) -> None:
    """The settings `acode agents connect` writes fail closed (``onFailure: "block"``)."""
    from acode.cli.commands.outside_agents import claude_settings
    from tests.cli.conftest import closed_port_url

    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(
        json.dumps(claude_settings(closed_port_url()))
    )
    turns = [("tool", "Write", {"file_path": str(project / "src/new.py"), "content": "x"}),
             ("tool", "Bash", {"command": "touch src/ran.txt"}), ("text", "done")]  # fmt: skip
    with scripted_model("anthropic", turns) as model:
        env = _env(tmp_path / "home", ANTHROPIC_BASE_URL=model.base_url, ANTHROPIC_API_KEY="dummy",
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
                   DISABLE_AUTOUPDATER="1", ACODE_HOOK_TOKEN="acodehk_x")  # fmt: skip
        done = subprocess.run([str(BIN / "claude"), "-p", "go", "--output-format", "json"], cwd=project,
                              env=env, capture_output=True, text=True, timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (project / "src/new.py").exists() and not (project / "src/ran.txt").exists()


@_needs("codex")
def test_codex_blocks_when_acode_is_unreachable(project: Path, tmp_path: Path) -> None:
    """Codex lets a failing hook's call run: the shim answers deny itself."""
    from acode.cli.commands.outside_agents import codex_config
    from tests.cli.conftest import closed_port_url

    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "token").write_text("acodehk_x")
    turns = [("tool", "exec_command", {"cmd": "touch src/ran.txt"}), ("text", "done")]
    with scripted_model("responses", turns) as model:
        (home / "config.toml").write_text(
            'model = "scripted"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\n'
            f'name = "scripted"\nbase_url = "{model.base_url}/v1"\nwire_api = "responses"\n'
            'env_key = "SCRIPTED_KEY"\n\n' + codex_config(closed_port_url(), home / "token")
        )
        done = subprocess.run(
            [str(BIN / "codex"), "exec", "--skip-git-repo-check", "-s", "danger-full-access",
             "--dangerously-bypass-hook-trust", "go"],
            cwd=project, env=_env(tmp_path / "home", CODEX_HOME=str(home), SCRIPTED_KEY="dummy"),
            capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (project / "src/ran.txt").exists()
    assert "acode could not decide this call" in done.stdout + done.stderr
