"""``acode roles set-model ROLE ENDPOINT``: give a role its model endpoint (its preferred,
or with ``--fallback`` its fallback), through the role-edit API admin's form uses."""

from __future__ import annotations

from typing import Annotated

import typer

from acode.cli.commands.models import role_model_set
from acode.cli.runtime import JsonOption, handles_errors


@handles_errors
def set_model(
    ctx: typer.Context,
    role: Annotated[str, typer.Argument(help="Role slug or name, any case (e.g. Planner).")],
    endpoint: Annotated[str, typer.Argument(help='The model endpoint (empty "": the default).')],
    fallback: Annotated[
        bool, typer.Option("--fallback", help="Set the role's fallback model instead.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Make ENDPOINT the role's preferred (or fallback) model. A protected role's change
    becomes a draft another admin publishes; every change is audited."""
    role_model_set(ctx, role, endpoint, fallback=fallback, as_json=as_json)
