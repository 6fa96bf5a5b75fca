"""``acode agents connect claude-code|codex``: make an agent a team already runs ask acode's
roles before every tool call; ``acode hook codex``: Codex's command hook (``hookshim``).

Connecting makes a hook token of the logged-in user (``POST /api/hook-tokens/``) and
writes the agent's hook settings:

- Claude Code: HTTP hooks in ``<project>/.claude/settings.json`` (or, with ``--managed
  FILE``, a managed settings file that also sets ``allowManagedHooksOnly`` and
  ``allowedHttpHookUrls``), every hook with ``onFailure: "block"`` (acode unreachable, a
  5xx or a non-JSON answer block the call); the token reaches the header through the
  ``ACODE_HOOK_TOKEN`` environment variable (``allowedEnvVars``), which
  ``.claude/settings.local.json`` sets (Claude Code keeps that file out of git).
- Codex: command hooks in ``$CODEX_HOME/config.toml`` (``~/.codex``) running the shim,
  the token in a file only its user reads; Codex runs user hooks only once trusted, so
  connecting trusts them as Codex's ``/hooks`` view would (``codex_trust``) and says so
  when it cannot.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from acode.cli import hookshim
from acode.cli.codex_trust import codex_hooks_trust
from acode.cli.errors import UsageError
from acode.cli.output import out
from acode.cli.runtime import handles_errors, runtime

agents_app = typer.Typer(help="Govern agents you run yourself (Claude Code, Codex).",
                         no_args_is_help=True)  # fmt: skip
hook_app = typer.Typer(help="Hooks outside agents run (what `acode agents connect` writes).",
                       no_args_is_help=True)  # fmt: skip

# The tools acode maps to its own (sessions_app.services.outside.mapping); others are left
# to the agent's own permissions.
CLAUDE_MATCHER = (
    "Bash|Write|Edit|MultiEdit|NotebookEdit|Read|Glob|Grep|LS|WebFetch|WebSearch|mcp__.*"
)
CLAUDE_EVENTS = ("PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure",
                 "SessionStart", "SessionEnd", "UserPromptSubmit")  # fmt: skip
CODEX_EVENTS = ("PreToolUse", "PostToolUse", "SessionStart")
HOOK_SECONDS = 60
TOKEN_VARIABLE = "ACODE_HOOK_TOKEN"


def claude_settings(url: str, *, machine: str = "", repository: str = "") -> dict[str, Any]:
    """Claude Code's hook settings for an acode at ``url`` (``machine`` and ``repository``:
    what a new session records of where it runs)."""
    headers = {"Authorization": f"Bearer ${TOKEN_VARIABLE}"}
    headers.update({k: v for k, v in (("X-Acode-Machine", machine),
                                      ("X-Acode-Repository", repository)) if v})  # fmt: skip
    hook = {
        "type": "http", "url": f"{url.rstrip('/')}/api/hooks/claude-code/", "headers": headers,
        "allowedEnvVars": [TOKEN_VARIABLE], "timeout": HOOK_SECONDS, "onFailure": "block",
    }  # fmt: skip
    hooks: dict[str, Any] = {}
    for event in CLAUDE_EVENTS:
        group: dict[str, Any] = {"hooks": [hook]}
        if event in ("PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure"):
            group = {"matcher": CLAUDE_MATCHER, **group}
        hooks[event] = [group]
    return {"hooks": hooks}


def _merged(path: Path, update: dict[str, Any]) -> None:
    current: dict[str, Any] = {}
    if path.exists():
        try:
            current = json.loads(path.read_text() or "{}")
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path} is not JSON ({exc}); fix or remove it first.") from None
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(current.get(key), dict):
            current[key] = {**current[key], **value}
        else:
            current[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(current, indent=2) + "\n")


def _secret_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    os.chmod(path, 0o600)


def codex_config(url: str, token_file: Path) -> str:
    """Codex's ``config.toml`` hook tables running the shim for an acode at ``url``."""
    command = shlex.join([sys.executable, "-I", hookshim.__file__, "codex", "--url", url,
                          "--token-file", str(token_file)])  # fmt: skip
    blocks = []
    for event in CODEX_EVENTS:
        blocks.append(
            f'[[hooks.{event}]]\nmatcher = "*"\n\n[[hooks.{event}.hooks]]\ntype = "command"\n'
            f"command = {json.dumps(command)}\ntimeout = {HOOK_SECONDS}\n"
        )
    return "# acode: every tool call asks acode's roles (acode agents connect codex)\n" + "\n".join(
        blocks
    )


def _trust(codex: str | None, home: Path, project: Path) -> None:
    """Trust the hooks just written (Codex skips untrusted hooks without a word)."""
    problem = "codex is not on PATH (--codex names it)"
    if codex:
        try:
            trusted = codex_hooks_trust(codex, home, project.resolve())
            if trusted == len(CODEX_EVENTS):
                out().print(f"Codex trusts acode's {trusted} hooks.")
                return
            problem = f"Codex trusts {trusted} of {len(CODEX_EVENTS)} of acode's hooks"
        except (OSError, RuntimeError) as exc:
            problem = str(exc)
    raise UsageError(
        f"The hooks are written but not trusted ({problem}): Codex skips them until you "
        "trust them in its /hooks view (or runs them with --dangerously-bypass-hook-trust)."
    )


def _token(ctx: typer.Context, role: str | None, name: str) -> tuple[str, str]:
    with runtime(ctx).client() as client:
        created = client.post("/api/hook-tokens/", {"name": name, "role": role or ""})
        return str(created["key"]), client.settings.url


@agents_app.command("connect")
@handles_errors
def connect(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help="claude-code or codex")],
    project: Annotated[Path, typer.Option("--project", help="The project (Claude Code).")] = Path(
        "."
    ),
    managed: Annotated[
        Path | None,
        typer.Option(
            "--managed",
            help="Write Claude Code's managed settings file here instead (allowManagedHooksOnly).",
        ),
    ] = None,
    codex_home: Annotated[
        Path | None,
        typer.Option("--codex-home", help="Codex's home (default: CODEX_HOME, then ~/.codex)."),
    ] = None,
    role: Annotated[
        str | None, typer.Option("--role", help="The role new sessions start in.")
    ] = None,
    codex: Annotated[
        str | None, typer.Option("--codex", help="The codex executable (default: on PATH).")
    ] = None,
) -> None:
    """Write the agent's hook settings so that every tool call asks acode first."""
    if agent not in ("claude-code", "codex"):
        raise UsageError("Connect claude-code or codex.")
    key, url = _token(ctx, role, f"{agent} on {os.uname().nodename}"[:100])
    if agent == "codex":
        home = codex_home or Path(os.environ.get("CODEX_HOME", Path.home() / ".codex"))
        token_file = home / "acode-hook-token"
        _secret_file(token_file, key)
        config = home / "config.toml"
        existing = config.read_text() if config.exists() else ""
        if "[[hooks." in existing:
            raise UsageError(f"{config} already has hooks; merge acode's by hand:\n"
                             + codex_config(url, token_file))  # fmt: skip
        config.write_text((existing + "\n" if existing else "") + codex_config(url, token_file))
        out().print(f"Wrote Codex's hooks to {config} (token in {token_file}).")
        _trust(codex or shutil.which("codex"), home, project)
        return
    settings = claude_settings(url, machine=os.uname().nodename)
    if managed is not None:
        base = url.rstrip("/")
        settings = {**settings, "allowManagedHooksOnly": True,
                    "allowedHttpHookUrls": [f"{base}/api/hooks/*"]}  # fmt: skip
        _merged(managed, settings)
        out().print(f"Wrote managed hook settings to {managed}; set {TOKEN_VARIABLE}={key} "
                    "in the environment Claude Code starts in.")  # fmt: skip
        return
    _merged(project / ".claude" / "settings.json",
            claude_settings(url, machine=os.uname().nodename, repository=hookshim.repository(project)))  # fmt: skip
    _merged(project / ".claude" / "settings.local.json", {"env": {TOKEN_VARIABLE: key}})
    out().print(f"Wrote Claude Code's hooks to {project / '.claude' / 'settings.json'} (the "
                "token in settings.local.json, which stays out of git).")  # fmt: skip


@hook_app.command(
    "codex", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def hook_codex(ctx: typer.Context) -> None:
    """Codex's command hook: the event on stdin; exit 2 (reason on stderr) blocks the call."""
    raise typer.Exit(hookshim.main(["codex", *ctx.args]))
