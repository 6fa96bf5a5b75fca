"""``acode roles list|show|export|import``: role definitions (read and portable YAML)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from acode.cli.client import ApiClient
from acode.cli.errors import UsageError
from acode.cli.output import emit, emit_json, esc, out
from acode.cli.runtime import JsonOption, fetch, handles_errors, role_names, runtime

app = typer.Typer(help="List, show, export and import role definitions.", no_args_is_help=True)

OutputFileArgument = Annotated[
    Path | None,
    typer.Argument(help="Where to write the YAML (default or '-': stdout).", show_default=False),
]
RoleArgument = Annotated[str, typer.Argument(help="Role slug or name, any case (e.g. Planner).")]
IncludePromptOption = Annotated[
    bool, typer.Option("--include-prompt", help="Also print the composed prompt text.")
]
PackOption = Annotated[
    str | None, typer.Option("--pack", help="Prompt pack for --include-prompt (default: active).")
]


def first_sentence(text: str) -> str:
    """The first sentence of a description, for one-line table cells."""
    head, dot, _ = text.partition(". ")
    return head + ("." if dot else "")


@app.command("list")
@handles_errors
def list_roles(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List roles with their description, tools and context strategy."""
    emit(fetch(ctx, "/api/roles/"), as_json=as_json, render=print_roles_table)


def print_roles_table(roles: list[dict[str, Any]]) -> None:
    """The roles table (shared by ``roles list`` and ``role list``)."""
    table = Table(title="Available Roles", title_justify="left", show_lines=True)
    table.add_column("Role", style="bold", no_wrap=True)
    table.add_column("Description")
    table.add_column("Tools")
    table.add_column("Context", no_wrap=True)
    for role in roles:
        table.add_row(
            esc(role["name"]),
            esc(first_sentence(role["description"])),
            esc(", ".join(role["tools"]) or "none"),
            esc(role["context_strategy"]),
        )
    out().print(table)


@app.command("show")
@handles_errors
def show(
    ctx: typer.Context,
    role: RoleArgument,
    include_prompt: IncludePromptOption = False,
    pack: PackOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one role: capabilities, tools, constraints, prompt, context, budgets, transitions."""
    with runtime(ctx).client() as client:
        print_role(client, role, include_prompt=include_prompt, pack=pack, as_json=as_json)


def print_role(
    client: ApiClient, name: str, *, include_prompt: bool, pack: str | None, as_json: bool
) -> None:
    """Print one role's details (shared by ``roles show`` and ``role show``)."""
    role = client.get(f"/api/roles/{name}/")
    prompt = (
        client.get(f"/api/roles/{name}/prompt/", params={"pack": pack}) if include_prompt else None
    )
    if as_json:
        emit_json({**role, "prompt": prompt} if include_prompt else role)
        return
    names = role_names(client) if role.get("transitions") else {}
    console = out()
    console.print(f"Role: [bold]{esc(role['name'])}[/] ({esc(role['slug'])})")
    console.print(f"Description: {esc(role['description'])}")
    if role.get("parent_role"):
        console.print(f"Parent: {esc(role['parent_role'])}")
    _print_list(console, "Capabilities", role["capabilities"])
    console.print()
    console.print("Tools:")
    for tool in role.get("available_tools") or []:
        console.print(f"  - {esc(tool['name'])}: {esc(tool['description'])}")
    if not role.get("available_tools"):
        console.print("  (none)")
    _print_list(console, "Constraints", role["constraints"])
    if role.get("write_paths"):
        _print_list(console, "May write", role["write_paths"])
    if role.get("command_patterns"):
        _print_list(console, "May run", role["command_patterns"])
    console.print()
    console.print(f"Prompt Key: {esc(role['prompt_component'])}")
    console.print(f"Context Strategy: {esc(role['context_strategy'])}")
    models = role.get("preferred_model") or "server default"
    if role.get("fallback_model"):
        models += f" (fallback {role['fallback_model']})"
    console.print(f"Model: {esc(models)}")
    console.print(
        f"Budget: {role.get('max_llm_calls')} LLM calls, {role.get('max_tokens')} tokens, "
        f"{role.get('timeout_seconds')} s"
    )
    console.print(
        f"Version: {esc(role.get('version'))} (hash {esc(str(role.get('content_hash'))[:12])})"
    )
    transitions = role.get("transitions") or []
    if transitions:
        console.print()
        console.print(f"Transitions from {esc(role['name'])}:")
        for t in transitions:
            target = names.get(t["to_role"], str(t["to_role"]).title())
            console.print(f"  - → {esc(target)} ({esc(t['condition'])})")
    if prompt is not None:
        console.print()
        note = " — fell back to the system prompt" if prompt.get("fell_back") else ""
        console.print(
            f"Prompt (pack {esc(prompt['pack'])}: {esc(' + '.join(prompt['components']))}{note}):"
        )
        for line in prompt.get("notes") or []:
            console.print(f"  [yellow]note:[/] {esc(line)}")
        console.print()
        typer.echo(prompt["text"])


def _print_list(console: Any, heading: str, items: list[str]) -> None:
    console.print()
    console.print(f"{heading}:")
    for item in items or ["None"]:
        console.print(f"  - {esc(item)}")


@app.command("export")
@handles_errors
def export(
    ctx: typer.Context,
    file: OutputFileArgument = None,
) -> None:
    """Export every role, tool, permission, transition rule and prompt pack as YAML."""
    with runtime(ctx).client() as client:
        text = client.get_text("/api/roles/export/")
    write_text_output(text, file, what="role definitions")


def write_text_output(text: str, file: Path | None, *, what: str) -> None:
    """Write to a file (saying so) or to stdout (nothing else printed, so it pipes)."""
    if file is None or str(file) == "-":
        typer.echo(text, nl=not text.endswith("\n"))
        return
    file.write_text(text, encoding="utf-8")
    out().print(f"Wrote {what} to {esc(file)}.")


def read_text_input(file: Path) -> str:
    """Read an import file, or stdin for '-'."""
    if str(file) == "-":
        return typer.get_text_stream("stdin").read()
    try:
        return file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"Cannot read {file}: {exc.strerror or exc}") from exc


@app.command("import")
@handles_errors
def import_(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="YAML file from `acode roles export` ('-': stdin).")],
    replace: Annotated[
        bool, typer.Option("--replace", help="Also remove what the file does not contain.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Import role definitions from YAML; the server validates everything before writing."""
    text = read_text_input(file)
    with runtime(ctx).client() as client:
        summary = client.post(
            "/api/roles/import/",
            params={"replace": "true" if replace else None},
            content=text,
            content_type="application/yaml",
        )
    emit(summary, as_json=as_json, render=print_import_summary)


def print_import_summary(summary: dict[str, Any]) -> None:
    """What an import wrote, in words."""
    console = out()
    console.print(
        f"Imported {summary['roles']} roles, {summary['tools']} tools, "
        f"{summary['permissions']} permissions, {summary['rules']} transition rules, "
        f"{summary['prompt_components']} prompt components."
    )
    if summary.get("versions"):
        console.print("New role versions: " + esc(", ".join(summary["versions"])))
    if summary.get("removed"):
        console.print("Removed: " + esc(", ".join(summary["removed"])))
    if summary.get("drafts"):  # protected roles: another admin publishes (acode role drafts)
        console.print("Drafts for review: " + esc(", ".join(summary["drafts"])))
