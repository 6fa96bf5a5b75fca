"""``acode role diff SLUG``: what a change to a role grants and takes, each with a
counterexample, beside its replay (POST /api/roles/<slug>/replay/); the change from a YAML
file and/or ``--set key=value``, as ``acode role replay`` takes it. Nothing is saved."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from acode.cli.commands import roles as roles_commands
from acode.cli.commands.role_replay import ChangeFileOption, ChangeSetsOption, draft_of
from acode.cli.output import emit_json, esc, out
from acode.cli.runtime import JsonOption, handles_errors, send


@handles_errors
def diff(
    ctx: typer.Context,
    role: roles_commands.RoleArgument,
    file: ChangeFileOption = None,
    sets: ChangeSetsOption = None,
    widens_fails: Annotated[
        bool,
        typer.Option("--fail-on-gain", help="Exit 1 when the change grants anything new."),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """What a change grants the role (and the roles below it) that it did not have, and
    what it takes away: each with a command, path or call as counterexample, decided with
    the server's own decision; then the replay's counts. Nothing is saved."""
    body = {"draft": draft_of(file, sets or [])}
    report = send(ctx, f"/api/roles/{role}/replay/", body)
    diffs = [report["diff"], *report.get("diff_below", [])]
    if as_json:
        emit_json({"diff": report["diff"], "diff_below": report.get("diff_below", [])})
    else:
        for item in diffs:
            print_diff(item)
        out().print(
            f"Replay: {report['decisions']} recorded decision(s), "
            f"{report['denied_to_allowed']} denied -> allowed, "
            f"{report['allowed_to_denied']} allowed -> denied "
            "(acode role replay shows them)"
        )
    if widens_fails and any(item["widens"] for item in diffs):
        raise typer.Exit(1)


def print_diff(diff: dict[str, Any]) -> None:
    """Gains (marked when conservative), then narrowings, then fields changed."""
    console = out()
    if not diff["gains"]:
        console.print(f"Role {esc(diff['role'])}: grants nothing new")
    else:
        console.print(f"Role {esc(diff['role'])}: grants {len(diff['gains'])} thing(s) new")
    for gain in diff["gains"]:
        mark = "[yellow]+?[/]" if not gain["exact"] else "[red]+[/] "
        console.print(f"  {mark} {esc(gain['dimension'])}: {esc(gain['text'])}")
    for item in diff["narrowings"]:
        console.print(f"  [green]-[/]  {esc(item['dimension'])}: {esc(item['text'])}")
    if diff["changed"]:
        console.print(f"  changed fields: {esc(', '.join(diff['changed']))}")
