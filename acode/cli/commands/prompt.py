"""``acode prompt compose``: the prompt a role's job starts with, layer by layer.

The layers come in the server's order: system, role, languages, frameworks, constraints
(README, Prompt layers). ``--verbose`` lists each part, where it came from and its size in
tokens before the text, so an admin sees which layer a cut or a missing one is.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from acode.cli.output import emit_json, esc, out, table
from acode.cli.runtime import JsonOption, handles_errors, runtime

app = typer.Typer(help="Compose a role's prompt from its layers.", no_args_is_help=True)


@app.command("compose")
@handles_errors
def compose(
    ctx: typer.Context,
    role: Annotated[str, typer.Option("--role", "-r", help="The role (slug or name).")],
    language: Annotated[
        list[str] | None,
        typer.Option("--language", "-l", help="A language layer (repeat for more)."),
    ] = None,
    framework: Annotated[
        list[str] | None,
        typer.Option("--framework", "-f", help="A framework layer (repeat for more)."),
    ] = None,
    pack: Annotated[
        str | None, typer.Option("--pack", help="Prompt pack (default: the active pack).")
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show each part, its source and size.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Print the prompt ROLE's jobs start with, with the given language and framework layers."""
    params = {
        "pack": pack,
        "language": ",".join(language or []) or None,
        "framework": ",".join(framework or []) or None,
    }
    with runtime(ctx).client() as client:
        composed = client.get(
            f"/api/roles/{role}/prompt/", params={k: v for k, v in params.items() if v}
        )
    if as_json:
        emit_json(composed)
        return
    if verbose:
        _print_parts(composed)
    typer.echo(composed["text"], nl=False)


def _print_parts(composed: dict[str, Any]) -> None:
    console = out()
    console.print(
        f"Composed prompt for {esc(composed['role'])} from pack {esc(composed['pack'])}: "
        f"{composed['tokens']} tokens"
    )
    rendered = table("#", "Layer", "Part", "Source", "Tokens", "Budget")
    for number, part in enumerate(composed["parts"], start=1):
        budget = "-" if part["budget"] is None else str(part["budget"])
        tokens = f"{part['tokens']} (cut)" if part["cut"] else str(part["tokens"])
        rendered.add_row(
            str(number), part["layer"], esc(part["key"]), esc(part["origin"]), tokens, budget
        )
    console.print(rendered)
    for note in composed.get("notes") or []:
        console.print(f"Note: {esc(note)}")
    console.print()
