"""``acode tool list``: the tools a role has and, for the rest, what it is missing;
``acode tool check``: whether a role may make a call, and the denial a job would get."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from acode.cli.errors import ExitCode, UsageError
from acode.cli.output import emit_json, esc, out, plural, print_denial, table
from acode.cli.runtime import (
    JsonOption,
    SessionOption,
    handles_errors,
    runtime,
    selected_session_id,
    send,
)

app = typer.Typer(help="Tools and which roles may use them.", no_args_is_help=True)


def _every_tool(tools: list[dict[str, Any]], *, as_json: bool) -> None:
    """Every tool, with its group and what it needs."""
    if as_json:
        emit_json(tools)
        return
    listed = table("Tool", "Group", "Description", "Requires", "Enabled", title="Tools",
                   title_justify="left")  # fmt: skip
    for tool in tools:
        listed.add_row(
            esc(tool["name"]),
            esc(tool.get("group") or "-"),
            esc(tool["description"]),
            esc(", ".join(tool["required_permissions"]) or "-"),
            "yes" if tool["enabled"] else "no",
        )
    out().print(listed)


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
            _every_tool(client.get("/api/tools/"), as_json=as_json)
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


@app.command("check")
@handles_errors
def check(
    ctx: typer.Context,
    tool: Annotated[str, typer.Argument(help="The tool (e.g. write_file).")],
    role: Annotated[str, typer.Option("--role", help="The role that would make the call.")],
    arguments: Annotated[
        str, typer.Option("--arguments", help="The call's arguments, a JSON object.")
    ] = "{}",
    as_json: JsonOption = False,
) -> None:
    """Would ROLE be allowed this call? The executor's decision, nothing run; a tool the
    role lacks prints the denial a job's model gets. Exits 5 when refused."""
    try:
        parsed: Any = json.loads(arguments)
    except ValueError as exc:
        raise UsageError(f"--arguments is not JSON: {exc}") from None
    found = send(ctx, f"/api/roles/{role}/check/", {"tool": tool, "arguments": parsed})
    if as_json:
        emit_json(found)
    elif found["allowed"]:
        out().print(f"[bold green][ALLOWED][/] {esc(tool)} in role {esc(found['role'])} "
                    f"({esc(found['rule'])})")  # fmt: skip
    else:
        print_denial(out(), found["reason"], found["code"])
    if not found["allowed"]:
        raise typer.Exit(ExitCode.AUTH)
