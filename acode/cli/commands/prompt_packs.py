"""``acode prompt-pack show|export|import``: the prompt packs roles draw their prompts from.

Export and import reuse the roles YAML endpoints with only the ``prompt_packs`` section,
so a pack file is a valid (partial) roles document and goes through the same validation
and dangerous-prompt checks on the server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
import yaml

from acode.cli.commands.roles import (
    OutputFileArgument,
    print_import_summary,
    read_text_input,
    write_text_output,
)
from acode.cli.errors import NotFound, UsageError
from acode.cli.output import emit_json, esc, out
from acode.cli.runtime import JsonOption, handles_errors, runtime, send
from acode.yamldoc import dump_yaml

app = typer.Typer(help="Show, export and import prompt packs.", no_args_is_help=True)

ROLES_FORMAT = "acode-roles/1"


def _size(count: int) -> str:
    return f"{count / 1024:.1f} KB" if count >= 1024 else f"{count} B"


@app.command("show")
@handles_errors
def show(
    ctx: typer.Context,
    name: Annotated[
        str | None,
        typer.Argument(help="Pack name (default: the active pack).", show_default=False),
    ] = None,
    component: Annotated[
        str | None,
        typer.Option("--component", "-c", help="Print this component's text (e.g. roles/coder)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Show a prompt pack and its components (the active pack unless NAME is given)."""
    with runtime(ctx).client() as client:
        packs = client.get("/api/prompt-packs/")
        if name is None:
            active = [p for p in packs if p.get("active")]
            name = active[0]["name"] if active else (packs[0]["name"] if packs else None)
        if name is None:
            raise UsageError("The server has no prompt packs.")
        pack = client.get(f"/api/prompt-packs/{name}/")
    if component is not None:
        texts = {c["key"]: c.get("content", "") for c in pack["components"]}
        if component not in texts:
            raise NotFound(
                f"Pack {pack['name']} has no component {component!r}.",
                suggestion="Components: " + ", ".join(sorted(texts)),
            )
        if as_json:
            emit_json({"pack": pack["name"], "key": component, "content": texts[component]})
        else:
            typer.echo(texts[component])
        return
    if as_json:
        emit_json(pack)
        return
    console = out()
    label = "Active Prompt Pack" if pack.get("active") else "Prompt Pack"
    console.print(f"{label}: [bold]{esc(pack['name'])}[/]")
    console.print(f"Version: {esc(pack['version'])}")
    if pack.get("description"):
        console.print(f"Description: {esc(pack['description'])}")
    console.print()
    console.print("Prompts:")
    for c in pack["components"]:
        mark = "✅" if c.get("bytes") else "⚠️ "
        console.print(f"  {mark} {esc(c['key'])} ({_size(int(c.get('bytes') or 0))})")
    console.print(f"  ({len(pack['components'])} prompts total)")
    others = [p["name"] for p in packs if p["name"] != pack["name"]]
    if others:
        console.print()
        console.print("Other packs: " + esc(", ".join(others)))


@app.command("export")
@handles_errors
def export(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Pack to export.")],
    file: OutputFileArgument = None,
) -> None:
    """Export one prompt pack as YAML (a roles document with only prompt_packs)."""
    with runtime(ctx).client() as client:
        client.get(f"/api/prompt-packs/{name}/")  # ACODE-PRM-002 for an unknown pack
        document = yaml.safe_load(client.get_text("/api/roles/export/"))
    packs = [p for p in document.get("prompt_packs") or [] if p.get("name") == name]
    text = dump_yaml({"format": document.get("format", ROLES_FORMAT), "prompt_packs": packs})
    write_text_output(text, file, what=f"prompt pack {name}")


@app.command("import")
@handles_errors
def import_(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="YAML with a prompt_packs section ('-': stdin).")],
    as_json: JsonOption = False,
) -> None:
    """Import prompt packs from YAML; only the prompt_packs section is sent, nothing removed."""
    try:
        document = yaml.safe_load(read_text_input(file))
    except yaml.YAMLError as exc:
        raise UsageError(f"{file} is not valid YAML: {exc}") from exc
    packs = document.get("prompt_packs") if isinstance(document, dict) else None
    if not packs:
        raise UsageError(
            f"{file} has no prompt_packs section.",
            suggestion="Start from `acode prompt-pack export NAME FILE`.",
        )
    body = dump_yaml({"format": document.get("format", ROLES_FORMAT), "prompt_packs": packs})
    summary = send(ctx, "/api/roles/import/", content=body, content_type="application/yaml")
    if as_json:
        emit_json(summary)
        return
    names = ", ".join(str(p.get("name")) for p in packs if isinstance(p, dict))
    out().print(f"Imported prompt pack(s): {esc(names)}")
    print_import_summary(summary)
