"""``acode role drafts|publish|reject``: drafts of protected roles (another admin publishes).

Registered on the ``role`` group by ``acode.cli.commands.role``."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from acode.cli.output import emit_json, esc, fmt_time, out
from acode.cli.runtime import JsonOption, fetch, handles_errors, send

DraftArgument = Annotated[int, typer.Argument(help="The draft's id (`acode role drafts`).")]
ReasonOption = Annotated[
    str, typer.Option("--reason", "-r", help="Why (recorded in the draft and the audit).")
]


@handles_errors
def drafts(
    ctx: typer.Context,
    status: Annotated[
        str | None,
        typer.Option("--status", help="Only drafts in this status: open, published, ..."),
    ] = None,
    role: Annotated[str | None, typer.Option("--role", help="Only drafts of this role.")] = None,
    as_json: JsonOption = False,
) -> None:
    """List drafts of protected roles, newest first, with what each changes."""
    params = {k: v for k, v in (("status", status), ("role", role)) if v}
    rows = fetch(ctx, "/api/role-drafts/", params=params)
    if as_json:
        emit_json(rows)
        return
    console = out()
    if not rows:
        console.print("No role drafts.")
    for row in rows:
        print_draft(row, brief=True)
        console.print()


def print_draft(row: dict[str, Any], *, brief: bool = False) -> None:
    """A draft: who made it on which version, its state, and each field it changes."""
    console = out()
    state = row["status"] + (" (stale: the role changed since)" if row["stale"] else "")
    console.print(
        esc(f"#{row['id']} {row['role']} on v{row['base_version']}: {state}, by {row['author']} "
            f"at {fmt_time(row['created_at'])}")
    )  # fmt: skip
    if row["decided_by"]:
        console.print(esc(f"   decided by {row['decided_by']}: {row['reason'] or '(no reason)'}"))
    for change in row["diff"]:
        before, after = json.dumps(change["before"]), json.dumps(change["after"])
        if brief:
            console.print(esc(f"   {change['field']}: {before[:60]} -> {after[:60]}"))
        else:
            console.print(esc(f"   {change['field']}: {before} -> {after}"))


def _decide(ctx: typer.Context, draft: int, action: str, reason: str, as_json: bool) -> None:
    row = send(ctx, f"/api/role-drafts/{draft}/{action}/", {"reason": reason})
    if as_json:
        emit_json(row)
        return
    out().print(f"[bold green][SUCCESS][/] Draft #{draft} {row['status']}.")
    print_draft(row)


@handles_errors
def publish(
    ctx: typer.Context, draft: DraftArgument, reason: ReasonOption = "", as_json: JsonOption = False
) -> None:
    """Publish another admin's draft: the role changes (needs roles.publish_roledraft)."""
    _decide(ctx, draft, "publish", reason, as_json)


@handles_errors
def reject(
    ctx: typer.Context, draft: DraftArgument, reason: ReasonOption = "", as_json: JsonOption = False
) -> None:
    """Reject a draft (or withdraw your own): nothing changes."""
    _decide(ctx, draft, "reject", reason, as_json)
