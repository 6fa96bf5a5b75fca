"""``acode model list|check``: the model endpoints, and whether a model can call tools."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from acode.cli.output import emit_json, esc, out
from acode.cli.runtime import JsonOption, handles_errors, runtime

app = typer.Typer(help="Model endpoints and their checks.", no_args_is_help=True)


@app.command("list")
@handles_errors
def list_models(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the model endpoints (``default``: the settings' endpoint)."""
    with runtime(ctx).client() as client:
        rows = client.get("/api/model-endpoints/")
    if as_json:
        emit_json(rows)
        return
    table = Table(title="Model endpoints", title_justify="left")
    for column in ("Name", "Kind", "Model", "Base URL", "Context", "JSON schema", "Enabled"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            esc(row["name"]),
            esc(row["kind"]),
            esc(row["model"]),
            esc(row["base_url"] or "-"),
            str(row["context_window"]),
            esc(row["schema_format"]) if row["supports_json_schema"] else "no",
            "yes" if row["enabled"] else "no",
        )
    out().print(table)


@app.command("check")
@handles_errors
def check(
    ctx: typer.Context,
    name: Annotated[
        str, typer.Argument(help="Endpoint name; default: the settings' endpoint.")
    ] = "default",
    as_json: JsonOption = False,
) -> None:
    """Send one tool-call probe: can the model call tools, how fast, what context window."""
    with runtime(ctx).client() as client:
        found = client.post(f"/api/model-endpoints/{name}/check/", {})
    if as_json:
        emit_json(found)
        return
    console = out()
    verdict = "[green]can call tools[/]" if found["can_call_tools"] else "[red]cannot call tools[/]"
    console.print(
        f"Model endpoint [bold]{esc(found['endpoint'])}[/] ({esc(found['model'])}): {verdict}"
    )
    console.print(esc(found["message"]))
    if found["answer"]:
        console.print(f"Answer: {esc(found['answer'])}")
    window = found["context_window"]
    console.print(
        f"Context window: {window} (reported by the server)"
        if window
        else f"Context window: not reported; configured {found['configured_context_window']}"
    )
    console.print(
        f"Took {found['seconds']:.1f} s; answers constrained by a JSON schema: "
        f"{'yes' if found['constrained'] else 'no'}"
    )
    if not found["can_call_tools"]:
        raise typer.Exit(1)
