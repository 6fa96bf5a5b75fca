"""Per-invocation state shared by commands: settings, the API client, error handling."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar, cast

import typer

from acode.cli.client import ApiClient, Params
from acode.cli.config import Config, Settings, load_config, resolve_settings
from acode.cli.errors import ApiError, CliError, ExitCode, NotFound, UsageError
from acode.cli.output import plural, print_error

JsonOption = Annotated[
    bool, typer.Option("--json", help="Print the API's JSON instead of text (for scripts).")
]
SessionOption = Annotated[
    str | None,
    typer.Option(
        "--session",
        "-s",
        help="Session id (or its first characters); default: ACODE_SESSION, then the "
        "current session set by `acode session new|use`.",
        show_default=False,
    ),
]

# Seconds between polls while following a job or run (hidden: tests poll faster).
IntervalOption = Annotated[
    float, typer.Option("--interval", min=0.05, hidden=True, help="Seconds between polls.")
]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Runtime:
    """What the root command parsed (``--url``), plus lazily loaded config."""

    url_option: str | None = None
    _config: Config | None = field(default=None, repr=False)

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = load_config()
        return self._config

    def settings(self, session: str | None = None) -> Settings:
        """Effective URL, token and session for this invocation."""
        return resolve_settings(self.config, url_option=self.url_option, session_option=session)

    def client(self, session: str | None = None) -> ApiClient:
        """An API client for the effective server and token."""
        return ApiClient(self.settings(session))


def runtime(ctx: typer.Context) -> Runtime:
    """The invocation's runtime (the root callback stores it; tests may call subcommands)."""
    root = ctx.find_root()
    if not isinstance(root.obj, Runtime):
        root.obj = Runtime()
    return cast(Runtime, root.obj)


def handles_errors(func: F) -> F:
    """Print CliErrors the way the CLI documents and exit with the error's class code.

    Done per command (not around the whole app) so typer's CliRunner, which calls the
    app directly, sees the same exit codes as the console script.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CliError as error:
            print_error(error, as_json=bool(kwargs.get("as_json")))
            raise typer.Exit(int(error.exit_code)) from error

    return cast(F, wrapper)


def fetch(ctx: typer.Context, path: str, params: Params | None = None) -> Any:
    """GET one API resource with a client opened for it (commands that read one thing)."""
    with runtime(ctx).client() as client:
        return client.get(path, params=params)


def send(ctx: typer.Context, path: str, body: Any = None, **options: Any) -> Any:
    """POST one request with a client opened for it (commands that do one thing) and return
    the API's answer; ``options`` as ``ApiClient.post`` takes them. ``fetch`` is its GET."""
    with runtime(ctx).client() as client:
        return client.post(path, body, **options)


@contextmanager
def server_must_offer(
    client: ApiClient, *, lacks: str, update: str, title: str = "Not available on this server"
) -> Iterator[None]:
    """Turn a route the server lacks (it is older than this CLI) into NOT_FOUND: "The server
    at URL ``lacks``.", suggesting "Update the server to a version with ``update``."; every
    other error passes."""
    try:
        yield
    except ApiError as error:
        if error.endpoint_missing:
            raise CliError(
                f"The server at {client.settings.url} {lacks}.",
                title=title,
                suggestion=f"Update the server to a version with {update}.",
                exit_code=ExitCode.NOT_FOUND,
            ) from error
        raise


@contextmanager
def session_client(ctx: typer.Context, session: str | None) -> Iterator[tuple[ApiClient, str]]:
    """An API client and the full id of the selected session (``--session`` or current),
    for the commands that act on one session."""
    with runtime(ctx).client(session) as client:
        yield client, selected_session_id(client)


def selected_session_id(client: ApiClient, *, required: bool = True) -> str:
    """The selected session's full id, expanding an id prefix through the session list."""
    settings = client.settings
    raw = settings.session
    if not raw:
        if not required:
            return ""
        raise UsageError(
            "No session selected.",
            title="No session",
            suggestion='Create one with `acode session new "title"`, pick one with '
            "`acode session use ID`, or pass --session ID.",
        )
    return expand_session_id(client, raw)


def expand_session_id(client: ApiClient, raw: str) -> str:
    """A full session id from a full id or a unique prefix (``a3f2c891``)."""
    raw = raw.strip()
    try:
        return str(uuid.UUID(raw))
    except ValueError:
        pass
    page = client.get("/api/sessions/", params={"limit": 500})
    matches = [s["id"] for s in page.get("results", []) if str(s["id"]).startswith(raw.lower())]
    if len(matches) == 1:
        return str(matches[0])
    if not matches:
        raise NotFound(
            f"No session you can see has an id starting with {raw!r}.",
            title="Unknown session",
            suggestion="List sessions with `acode session list`.",
        )
    raise UsageError(
        f"{len(matches)} sessions have ids starting with {raw!r}.",
        title="Ambiguous session id",
        suggestion="Give more characters of the id.",
    )


def one_starting_with(prefix: str, ids: Iterable[Any], *, what: str, suggestion: str) -> str:
    """The one id in ``ids`` that starts with ``prefix`` (trimmed, any case), for commands
    that take an id or its first characters; else NOT_FOUND saying how many matched.

    ``what`` names the ids in the message: ``run you can see`` gives "No single run you
    can see starts with ..." and the title "Unknown run".
    """
    wanted = prefix.strip().lower()
    matches = [str(i) for i in ids if str(i).startswith(wanted)]
    if wanted and len(matches) == 1:
        return matches[0]
    raise CliError(
        f"No single {what} starts with {prefix!r} ({plural(len(matches), 'match', 'matches')}).",
        title=f"Unknown {what.split()[0]}",
        suggestion=suggestion,
        exit_code=ExitCode.NOT_FOUND,
    )


def role_names(client: ApiClient) -> dict[str, str]:
    """Role slug → display name, for showing transitions stored by slug."""
    return {r["slug"]: r["name"] for r in client.get("/api/roles/")}
