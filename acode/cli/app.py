"""The ``acode`` command: a client of the acode REST API (local or remote server)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

import typer
import typer.core

from acode.cli.commands import (
    agent,
    audit,
    auth,
    changes,
    context,
    jobs,
    models,
    plans,
    prompt_packs,
    role,
    roles,
    runs,
    sessions,
    status,
    tools,
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


app.command("login")(auth.login)
app.command("logout")(auth.logout)
app.command("whoami")(auth.whoami)
app.command("status")(status.status)
app.command("agent")(agent.agent)
app.add_typer(sessions.app, name="session")
app.add_typer(roles.app, name="roles")
app.add_typer(role.app, name="role")
app.add_typer(tools.app, name="tool")
app.add_typer(audit.app, name="audit")
app.add_typer(prompt_packs.app, name="prompt-pack")
app.add_typer(context.app, name="context")
app.add_typer(jobs.app, name="job")
app.add_typer(runs.app, name="run")
app.add_typer(plans.app, name="plan")
app.add_typer(changes.app, name="changes")
app.add_typer(models.app, name="model")


def main() -> None:
    """Entry point of the ``acode`` console script."""
    app()
