"""``acode tool list``: the tools a role has and, for the rest, what it is missing."""

from __future__ import annotations

from typing import Annotated

import typer

from acode.cli.errors import UsageError
from acode.cli.output import emit_json, esc, out, plural, table
from acode.cli.runtime import (
    JsonOption,
    SessionOption,
    handles_errors,
    runtime,
    selected_session_id,
)

app = typer.Typer(help="Tools and which roles may use them.", no_args_is_help=True)


@app.command("list")
@handles_errors
def list_tools(
    ctx: typer.Context,
    role: Annotated[
        str | None, typer.Option("--role", help="Show what this role may and may not use.")
    ] = None,
    current_role: Annotated[
        bool, typer.Option("--current-role", help="Use the current session's role.")
    ] = False,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """List tools available to a role and the restricted ones with the missing permission.

    Without --role or --current-role, lists every tool with its required permissions.
    """
    if role and current_role:
        raise UsageError("Give either --role or --current-role, not both.")
    with runtime(ctx).client(session) as client:
        if current_role:
            sid = selected_session_id(client)
            role = client.get(f"/api/sessions/{sid}/")["current_role"]["slug"]
        if not role:
            tools = client.get("/api/tools/")
            if as_json:
                emit_json(tools)
                return
            listed = table(
                "Tool", "Description", "Requires", "Enabled", title="Tools", title_justify="left"
            )
            for tool in tools:
                listed.add_row(
                    esc(tool["name"]),
                    esc(tool["description"]),
                    esc(", ".join(tool["required_permissions"]) or "-"),
                    "yes" if tool["enabled"] else "no",
                )
            out().print(listed)
            return
        data = client.get(f"/api/roles/{role}/")
    available, withheld = data["available_tools"], data["withheld_tools"]
    if as_json:
        emit_json({"role": data["slug"], "available_tools": available, "withheld_tools": withheld})
        return
    console = out()
    console.print(f"Available Tools for Role: [bold]{esc(data['name'])}[/]")
    console.print()
    for tool in available:
        console.print(f"- {esc(tool['name'])}: {esc(tool['description'])}")
    console.print()
    console.print(f"({plural(len(available), 'tool')} available)")
    if withheld:
        console.print()
        console.print("Restricted Tools (not available in this role):")
        for tool in withheld:
            missing = tool.get("missing_permissions") or []
            why = f"missing permission {', '.join(missing)}" if missing else tool.get("reason", "")
            console.print(f"- {esc(tool['name'])}: {esc(tool['description'])} [dim]({esc(why)})[/]")
