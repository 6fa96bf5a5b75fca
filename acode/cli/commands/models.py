"""``acode model list|add|use|check``: the model endpoints, adding one (an OpenAI-compatible
server or a scripted one), giving a role its model, and whether a model can call tools.
``acode model show|set`` (which roles use which endpoint, and changing that or an
endpoint's context size) are in ``model_routing``, joined to the group in ``acode.cli.app``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from acode.cli.errors import CliError
from acode.cli.output import emit, emit_json, esc, out, table
from acode.cli.runtime import JsonOption, fetch, handles_errors, runtime, send

app = typer.Typer(help="Model endpoints, which roles use them, and their checks.",
                  no_args_is_help=True)  # fmt: skip
UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        "--base-url",
        help="OpenAI-compatible: the server's /v1 URL (default: ACODE_LLM_BASE_URL).",
    ),
]
ContextSizeOption = Annotated[
    int | None,
    typer.Option(
        "--context-size", min=256, help="The model's context window, in tokens.", show_default=False
    ),
]


@app.command("list")
@handles_errors
def list_models(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the model endpoints (``default``: the settings' endpoint)."""
    emit(fetch(ctx, "/api/model-endpoints/"), as_json=as_json, render=print_models_table)


def print_models_table(rows: list[dict[str, Any]]) -> None:
    """The model endpoints, one a row."""
    columns = ("Name", "Kind", "Model", "Base URL", "Context", "JSON schema", "Enabled")
    rendered = table(*columns, title="Model endpoints", title_justify="left")
    for row in rows:
        scripted = row["kind"] == "scripted"
        rendered.add_row(
            esc(row["name"]),
            "scripted (replays a script)" if scripted else esc(row["kind"]),
            "-" if scripted else esc(row["model"]),
            "-" if scripted else esc(row["base_url"] or "-"),
            str(row["context_window"]),
            esc(row["schema_format"]) if row["supports_json_schema"] else "no",
            "yes" if row["enabled"] else "no",
        )
    out().print(rendered)


def _script(path: Path | None) -> Any:
    if path is None:
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CliError(
            f"Could not read the script {path}: {exc}",
            title="Bad script file",
            suggestion="Give a JSON file holding a list of steps (README, Scripted model "
            "endpoints).",
        ) from None


@app.command("add")
@handles_errors
def add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The endpoint's name (what roles name).")],
    model: Annotated[
        str | None, typer.Option("--model", help="OpenAI-compatible: the model name to send.")
    ] = None,
    base_url: UrlOption = None,
    context_size: ContextSizeOption = None,
    api_key_env: Annotated[
        str | None,
        typer.Option("--api-key-env", help="The server's environment variable holding the key."),
    ] = None,
    json_schema: Annotated[
        bool | None,
        typer.Option(
            "--json-schema/--no-json-schema", help="Constrain answers with a JSON schema."
        ),
    ] = None,
    script: Annotated[
        Path | None,
        typer.Option(
            "--script",
            help="Scripted: a JSON file of the steps to replay.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    input_price: Annotated[
        float | None, typer.Option("--input-price", help="Price per million input tokens.")
    ] = None,
    output_price: Annotated[
        float | None, typer.Option("--output-price", help="Price per million output tokens.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Add a model endpoint, or change one: ``--script FILE`` makes a scripted one, else
    ``--model`` (and ``--url``) an OpenAI-compatible one."""
    body: dict[str, Any] = {"kind": "scripted" if script else "openai"}
    options = {
        "model": model, "base_url": base_url, "api_key_env": api_key_env,
        "supports_json_schema": json_schema, "script": _script(script),
        "input_price": input_price, "output_price": output_price,
        "context_window": context_size,
    }  # fmt: skip
    body.update({key: value for key, value in options.items() if value is not None})
    with runtime(ctx).client() as client:
        row = client.put(f"/api/model-endpoints/{name}/", body)
    if as_json:
        emit_json(row)
        return
    what = "scripted (replays a script)" if row["kind"] == "scripted" else row["model"]
    out().print(f"[bold green][SUCCESS][/] Model endpoint {esc(row['name'])}: {esc(what)}.")
    out().print(f"Check it with `acode model check {row['name']}`; give a role it with "
                f"`acode model use {row['name']} --role ROLE`.")  # fmt: skip


@app.command("use")
@handles_errors
def use(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help='The endpoint (empty "": the default).')],
    role: Annotated[str, typer.Option("--role", "-r", help="The role that gets the model.")],
    fallback: Annotated[
        bool, typer.Option("--fallback", help="Set the role's fallback model instead.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Make the endpoint a role's preferred (or fallback) model. A protected role's change
    becomes a draft another admin publishes."""
    role_model_set(ctx, role, name, fallback=fallback, as_json=as_json)


def role_model_set(
    ctx: typer.Context, role: str, name: str, *, fallback: bool, as_json: bool
) -> None:
    """Give ``role`` the endpoint ``name`` through the role-edit API admin's form uses
    (``PATCH /api/roles/{role}/``): a protected role's change becomes a draft, audited."""
    field = "fallback_model" if fallback else "preferred_model"
    with runtime(ctx).client() as client:
        result = client.patch(f"/api/roles/{role}/", {field: name})
    if as_json:
        emit_json(result)
        return
    if "base_version" in result:  # a protected role: the answer is the draft
        out().print(f"Role {esc(role)} is protected: the change is draft {esc(result['id'])}, "
                    "for another admin to publish (`acode role publish`).")  # fmt: skip
        return
    out().print(f"[bold green][SUCCESS][/] Role {esc(result.get('name') or role)} now uses "
                f"{esc(name or 'the default model')} as its {field.split('_')[0]} model.")  # fmt: skip


@app.command("check")
@handles_errors
def check(
    ctx: typer.Context,
    name: Annotated[
        str, typer.Argument(help="Endpoint name; default: the settings' endpoint.")
    ] = "default",
    probes: Annotated[
        int, typer.Option("--probes", min=1, max=10, help="How many probes to send.")
    ] = 3,
    as_json: JsonOption = False,
) -> None:
    """Send tool-call probes (deterministic sampling): in how many the model called the
    tool, how fast, what context window. Exits 1 unless every probe called it."""
    found = send(ctx, f"/api/model-endpoints/{name}/check/", {}, params={"probes": probes})
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
        f"{found.get('tool_probes', 0)} of {found.get('probes', 1)} probes called a tool; "
        f"{found['seconds']:.1f} s a probe; answers constrained by a JSON schema: "
        f"{'yes' if found['constrained'] else 'no'}"
    )
    if not found["can_call_tools"]:
        raise typer.Exit(1)
