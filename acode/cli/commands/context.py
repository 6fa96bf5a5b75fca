"""``acode context show``: what context a role would get for a task (scenario 8).

Reads ``GET /api/sessions/{id}/context/`` (the same context builder jobs use).
"""

from __future__ import annotations

from typing import Annotated

import typer

from acode.cli.output import emit_json, esc, out
from acode.cli.runtime import (
    JsonOption,
    SessionOption,
    handles_errors,
    server_must_offer,
    session_client,
)

app = typer.Typer(help="Inspect the context a role is given.", no_args_is_help=True)


@app.command("show")
@handles_errors
def show(
    ctx: typer.Context,
    role: Annotated[
        str | None, typer.Option("--role", help="Role to build for (default: the current role).")
    ] = None,
    task: Annotated[
        str | None, typer.Option("--task", help="Task text that focuses the context.")
    ] = None,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the files, token count and strategy of the context for a role and task."""
    with session_client(ctx, session) as (client, sid):
        lacks = "cannot show context yet (GET /api/sessions/{id}/context/ is missing)"
        with server_must_offer(client, lacks=lacks, update="the jobs API"):
            data = client.get(f"/api/sessions/{sid}/context/", params={"role": role, "task": task})
    if as_json:
        emit_json(data)
        return
    files = data.get("files") or []
    console = out()
    console.print(f"Context for Role: [bold]{esc(data.get('role'))}[/]")
    strategy, requested = data.get("strategy"), data.get("requested_strategy")
    asked = f" (the role asks for {requested})" if requested and requested != strategy else ""
    console.print(f"Strategy: {esc(strategy)}{esc(asked)}")
    console.print()
    budget = int(data.get("budget") or 0)
    of_budget = f" of a {budget:,} budget" if budget else ""
    console.print(f"Token Count: {int(data.get('token_count') or 0):,}{of_budget}")
    console.print(f"Files: {len(files)}")
    if files:
        console.print()
        console.print("Included Files:")
        for f in files:
            share = f.get("share")
            share_text = f", {float(share):.0%}" if isinstance(share, int | float) else ""
            path, mode = str(f.get("path")), str(f.get("mode") or "full")
            # Synthetic entries are named after their mode, e.g. "(request)"; say it once.
            how = "" if path == f"({mode})" else f"{mode}, "
            console.print(
                f"  - {esc(path)} ({esc(how)}{int(f.get('tokens') or 0):,} tokens{share_text})"
            )
    for note in data.get("notes") or []:
        console.print()
        console.print(f"Note: {esc(note)}")
