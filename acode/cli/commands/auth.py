"""``acode login``, ``acode logout`` and ``acode whoami``."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from acode.cli.client import ApiClient
from acode.cli.config import Settings, config_path, normalise_url, save_config
from acode.cli.errors import ApiError, CliError, ExitCode
from acode.cli.output import emit_json, err, esc, out
from acode.cli.runtime import JsonOption, handles_errors, runtime

TOKEN_ENDPOINT = "/api/auth/token/"


@handles_errors
def login(
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Option("--url", help="Server to log in to (default: the effective server URL)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token", help="Use this API token instead of asking for a username and password."
        ),
    ] = None,
    username: Annotated[
        str | None, typer.Option("--username", "-u", help="Username (asked if not given).")
    ] = None,
) -> None:
    """Log in and save a token for the server in your config directory (mode 0600).

    Without --token, asks for a username and password and exchanges them for a token at
    POST /api/auth/token/. The server URL is remembered, so later commands use it.
    """
    rt = runtime(ctx)
    settings = rt.settings()
    if url:
        settings = replace(settings, url=normalise_url(url), url_source="--url")
    if not token:
        token = _obtain_token(settings.url, settings.url_source, username)
    checked = replace(settings, token=token, token_source="login")
    with ApiClient(checked) as client:
        me = client.get("/api/me/")
    config = rt.config
    entry = config.server(checked.url)
    entry.token = token
    entry.username = str(me.get("username") or "")
    config.url = checked.url
    path = save_config(config)
    out().print(
        f"Logged in to {esc(checked.url)} as [bold]{esc(entry.username)}[/]. "
        f"Token saved in {esc(path)} (readable by you only)."
    )
    if settings.token_source == "ACODE_TOKEN":
        err().print(
            "[yellow]Note:[/] ACODE_TOKEN is set in your environment and takes precedence "
            "over the saved token; unset it to use this login."
        )


def _obtain_token(url: str, url_source: str, username: str | None) -> str:
    if not username:
        username = typer.prompt("Username")
    password = typer.prompt("Password", hide_input=True)
    anonymous = Settings(url, "", "", url_source, "", "")
    with ApiClient(anonymous) as client:
        try:
            body = client.post(TOKEN_ENDPOINT, {"username": username, "password": password})
        except ApiError as error:
            if error.endpoint_missing:
                raise CliError(
                    f"The server at {url} has no token endpoint (POST {TOKEN_ENDPOINT}).",
                    title="Password login not available",
                    suggestion="Create a token in the admin (Auth Token → Tokens) or with "
                    "`manage.py drf_create_token USER`, then run `acode login --token TOKEN`.",
                    exit_code=ExitCode.NOT_FOUND,
                ) from error
            if error.http_status in (400, 401, 403):
                raise CliError(
                    error.message or "Unable to log in with the given username and password.",
                    title="Login failed",
                    suggestion="Check the username and password, or log in with "
                    "`acode login --token TOKEN`.",
                    exit_code=ExitCode.AUTH,
                ) from error
            raise
    token = body.get("token") if isinstance(body, dict) else None
    if not token:
        raise CliError(
            f"POST {TOKEN_ENDPOINT} answered without a token.",
            title="Login failed",
            exit_code=ExitCode.OTHER,
        )
    return str(token)


@handles_errors
def logout(ctx: typer.Context) -> None:
    """Revoke the token on the server, then forget it (and the current session) here."""
    rt = runtime(ctx)
    settings = rt.settings()
    config = rt.config
    if settings.token:
        try:
            with ApiClient(settings) as client:
                client.delete(TOKEN_ENDPOINT)
        except CliError as exc:  # still forget it locally; say why the server kept it
            err().print(
                f"[yellow]Note:[/] the server did not revoke the token ({esc(exc.message)})."
            )
    entry = config.servers.pop(settings.url, None)
    save_config(config)
    if entry and entry.token:
        out().print(f"Logged out of {esc(settings.url)}; the saved token was removed.")
    else:
        out().print(f"No saved token for {esc(settings.url)}.")
    if settings.token_source == "ACODE_TOKEN":
        err().print("[yellow]Note:[/] ACODE_TOKEN is still set in your environment.")


@handles_errors
def whoami(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show the server, the user the token belongs to, and where each setting came from."""
    rt = runtime(ctx)
    settings = rt.settings()
    with ApiClient(settings) as client:
        me = client.get("/api/me/")
    data = {
        "url": settings.url,
        "url_source": settings.url_source,
        "username": me.get("username"),
        "is_staff": me.get("is_staff"),
        "token_source": settings.token_source,
        "session": settings.session or None,
        "config_file": str(config_path()),
    }
    if as_json:
        emit_json(data)
        return
    console = out()
    console.print(f"Server: {esc(settings.url)} (from {esc(settings.url_source)})")
    console.print(f"User: {esc(me.get('username'))}" + (" (staff)" if me.get("is_staff") else ""))
    console.print(f"Token: from {esc(settings.token_source or 'nowhere')}")
    console.print(f"Current session: {esc(settings.session or 'none')}")
    console.print(f"Config file: {esc(config_path())}")
