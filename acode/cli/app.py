"""The ``acode`` command: a client of the acode REST API (local or remote server)."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

import typer
import typer.core

from acode.cli.commands import (
    agent,
    audit,
    auth,
    backlog,
    changes,
    context,
    jobs,
    model_routing,
    models,
    outside_agents,
    plans,
    prompt,
    prompt_packs,
    role,
    roles,
    roles_models,
    runs,
    search,
    sessions,
    status,
    tools,
    verify,
)
from acode.cli.runtime import Runtime

app = typer.Typer(
    name="acode",
    help="Run AI coding agents under explicit, enforced roles. Talks to an acode server "
    "(ACODE_URL, default http://127.0.0.1:8000) with a token (ACODE_TOKEN or `acode login`).",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


# Typer's help prints every option's type, a flag's as ``<bool>`` after ``--version``
# (issue 34): a flag takes no value, so its type column stays empty.
_option_type = typer.core.TyperOption.display_type_rich


def _flag_type(self: typer.core.TyperOption, ctx: Any) -> str | None:
    return None if self.is_flag else _option_type(self, ctx)


typer.core.TyperOption.display_type_rich = _flag_type  # type: ignore[method-assign]


def _version(value: bool) -> None:
    if value:
        try:
            typer.echo(f"acode {version('acode')}")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            typer.echo("acode (not installed)")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Server URL for this command (default: ACODE_URL, then the URL saved by "
            "`acode login`, then http://127.0.0.1:8000).",
            show_default=False,
        ),
    ] = None,
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Run AI coding agents under explicit, enforced roles."""
    ctx.obj = Runtime(url_option=url)


# The command line's commands and groups, in the order its help lists them.
COMMANDS: dict[str, Callable[..., Any]] = {
    "login": auth.login,
    "logout": auth.logout,
    "whoami": auth.whoami,
    "status": status.status,
    "agent": agent.agent,
    "verify": verify.verify,
    "search": search.search,
}
GROUPS = {
    "session": sessions.app,
    "roles": roles.app,
    "role": role.app,
    "tool": tools.app,
    "audit": audit.app,
    "prompt": prompt.app,
    "prompt-pack": prompt_packs.app,
    "context": context.app,
    "job": jobs.app,
    "run": runs.app,
    "plan": plans.app,
    "changes": changes.app,
    "model": models.app,
    "agents": outside_agents.agents_app,
    "hook": outside_agents.hook_app,
    "backlog": backlog.app,
}
# Subcommands kept in modules of their own, joined to their group here.
SUBCOMMANDS: dict[tuple[typer.Typer, str], Callable[..., Any]] = {
    (models.app, "show"): model_routing.show,
    (models.app, "set"): model_routing.set_,
    (roles.app, "set-model"): roles_models.set_model,
}
for (group, name), command in SUBCOMMANDS.items():
    group.command(name)(command)
for name, command in COMMANDS.items():
    app.command(name)(command)
for name, group in GROUPS.items():
    app.add_typer(group, name=name)


def main() -> None:
    """Entry point of the ``acode`` console script."""
    app()
