"""``acode model show`` and ``acode model set``: which roles use which model endpoint and
with what context size, and changing either.

A role names a model endpoint (its preferred, and a fallback); an endpoint holds the model,
its server and its context size. So ``set`` takes a role or an endpoint: a role gets an
endpoint (as ``acode model use``, through the role-edit API, drafts and audit included),
an endpoint gets a context size; ``set ROLE --context-size N`` changes the endpoint the
role uses.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from acode.cli.client import ApiClient
from acode.cli.commands.models import ContextSizeOption, role_model_set
from acode.cli.errors import NotFound, UsageError
from acode.cli.output import emit_json, esc, out, table
from acode.cli.runtime import JsonOption, fetch, handles_errors, runtime

DEFAULT = "default"  # the settings' endpoint, unless a row has the name


@handles_errors
def show(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """The model endpoints, which roles use each (preferred or fallback), context sizes."""
    endpoints = fetch(ctx, "/api/model-endpoints/")
    if as_json:
        emit_json(endpoints)
        return
    console = out()
    listed = table(
        "Endpoint", "Model", "Base URL", "Context size", "Used by", title="Model endpoints",
        title_justify="left",
    )  # fmt: skip
    roles: dict[str, list[str]] = {}
    for row in endpoints:
        scripted = row["kind"] == "scripted"
        users = [f"{u['role']}" + (" (fallback)" if u["use"] == "fallback" else "")
                 for u in row.get("used_by", [])]  # fmt: skip
        listed.add_row(
            esc(row["name"]) + ("" if row["enabled"] else " (disabled)"),
            "scripted" if scripted else esc(row["model"]),
            "-" if scripted else esc(row["base_url"] or "-"),
            str(row["context_window"]),
            esc(", ".join(users) or "-"),
        )
        for user in row.get("used_by", []):
            where = f"{row['name']} (context size {row['context_window']})"
            roles.setdefault(user["role"], []).append(
                where if user["use"] == "preferred" else f"fallback {where}"
            )
    console.print(listed)
    console.print("Roles:")
    for role, uses in roles.items():
        console.print(f"  {esc(role)}: {esc('; '.join(uses))}")


def _role_of(client: ApiClient, name: str) -> dict[str, Any] | None:
    for role in client.get("/api/roles/"):
        if name.lower() in (role["slug"].lower(), role["name"].lower()):
            return dict(client.get(f"/api/roles/{role['slug']}/"))
    return None


@handles_errors
def set_(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="A role (Planner) or a model endpoint.")],
    endpoint: Annotated[
        str | None,
        typer.Argument(help="With a role: the endpoint it should use.", show_default=False),
    ] = None,
    context_size: ContextSizeOption = None,
    fallback: Annotated[
        bool, typer.Option("--fallback", help="With a role: its fallback model instead.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Give a role an endpoint, or an endpoint a context size.

    set ROLE ENDPOINT: the role uses the endpoint. set ENDPOINT --context-size N: the
    endpoint's context size. set ROLE --context-size N: the size of the endpoint the role
    uses. A name that is both a role and an endpoint means the endpoint."""
    if endpoint is None and context_size is None:
        raise UsageError("Give an endpoint for the role, or --context-size, or both.")
    with runtime(ctx).client() as client:
        rows = client.get("/api/model-endpoints/")
        endpoints = {row["name"].lower() for row in rows}
        role = (
            None if endpoint is None and target.lower() in endpoints else _role_of(client, target)
        )
    if role is None and target.lower() not in endpoints:
        raise NotFound(
            f"{target!r} is neither a role nor a model endpoint.",
            suggestion="See them with `acode model show`.",
        )
    if role is not None and endpoint is not None:
        role_model_set(ctx, role["slug"], endpoint, fallback=fallback, as_json=as_json)
    if context_size is None:
        return
    name = target if role is None else endpoint or _used(role, fallback=fallback)
    # The list starts with the settings' endpoint; a row may share its name (and wins).
    if [row["name"].lower() for row in rows].count(name.lower()) == 1 and name == DEFAULT:
        raise UsageError(
            "The default endpoint's context size is the server's ACODE_LLM_CONTEXT_WINDOW setting.",
            suggestion="Set it there, or add an endpoint (`acode model add NAME --url URL "
            "--model M --context-size N`) and give the role it (`acode roles set-model`).",
        )
    with runtime(ctx).client() as client:
        saved = client.put(f"/api/model-endpoints/{name}/", {"context_window": context_size})
    if as_json:
        emit_json(saved)
        return
    out().print(f"[bold green][SUCCESS][/] Model endpoint {esc(saved['name'])}: context size "
                f"{saved['context_window']} tokens.")  # fmt: skip


def _used(role: dict[str, Any], *, fallback: bool) -> str:
    name = role["fallback_model"] if fallback else (role["preferred_model"] or DEFAULT)
    if not name:
        raise UsageError(f"Role {role['name']} has no fallback model to size.")
    return str(name)
