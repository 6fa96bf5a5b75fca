"""``acode changes show|approve``: the current session's pending changes.

Uses ``GET /api/sessions/{id}/changes/`` and ``POST /api/sessions/{id}/changes/approve/``
(approving needs a role holding ``approve_changes``, such as Reviewer; it commits the
changes on the session branch).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from acode.cli.output import emit_json, esc, fmt_time, out, plural
from acode.cli.runtime import (
    JsonOption,
    SessionOption,
    handles_errors,
    runtime,
    selected_session_id,
)

app = typer.Typer(
    help="The current session's pending changes: show them (with diffs), approve them.",
    no_args_is_help=True,
)


@app.command("show")
@handles_errors
def show(
    ctx: typer.Context,
    diff: Annotated[bool, typer.Option("--diff", help="Print each change's diff.")] = False,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the session's pending (uncommitted) changes."""
    with runtime(ctx).client(session) as client:
        changes: list[dict[str, Any]] = client.get(
            f"/api/sessions/{selected_session_id(client)}/changes/"
        )
    if as_json:
        emit_json(changes)
        return
    console = out()
    if not changes:
        console.print("No pending changes.")
        return
    console.print(f"Pending changes: {plural(len(changes), 'file')}")
    for change in changes:
        console.print(
            f"  {esc(change['kind']):<9} {esc(change['path'])}  (by "
            f"{esc(change.get('role') or '-')}, {fmt_time(change.get('updated_at'))})"
        )
    if diff:
        for change in changes:
            console.print()
            console.print(f"[bold]{esc(change['path'])}[/]")
            # Diffs go out verbatim: markup-escaped, never highlighted or wrapped.
            console.print(escape(change.get("diff") or "(no diff)"), soft_wrap=True)


@app.command("approve")
@handles_errors
def approve(
    ctx: typer.Context,
    summary: Annotated[
        str, typer.Option("--summary", "-m", help="Commit message summary (recorded).")
    ] = "",
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Approve the pending changes and commit them on the session branch (Reviewer role)."""
    with runtime(ctx).client(session) as client:
        result: dict[str, Any] = client.post(
            f"/api/sessions/{selected_session_id(client)}/changes/approve/", {"summary": summary}
        )
    if as_json:
        emit_json(result)
        return
    count = int(result.get("approved") or 0)
    if not count:
        out().print("No pending changes to approve.")
        return
    out().print(
        f"[bold green][SUCCESS][/] Approved {plural(count, 'pending change')}; committed on "
        "the session branch."
    )
