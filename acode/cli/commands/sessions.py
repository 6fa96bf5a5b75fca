"""``acode session new|list|use|show|archive|restore``: sessions and the current-session
pointer."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from acode.cli.config import save_config
from acode.cli.output import emit_json, esc, fmt_time, out, short_id, table
from acode.cli.runtime import (
    JsonOption,
    expand_session_id,
    fetch,
    handles_errors,
    runtime,
    session_client,
)

app = typer.Typer(help="Create, list, select and show sessions.", no_args_is_help=True)


class RiskTier(StrEnum):
    low = "low"
    medium = "medium"
    high = "high"


STEP_MARKS = {
    "done": "✓",
    "skipped": "↷",
    "in_progress": "▶",
    "blocked": "✗",
    "pending": "·",
}


def plan_progress(session: dict[str, Any]) -> str:
    """``3/5 steps complete``, or ``no plan``."""
    progress = session.get("plan_progress") or {}
    total = int(progress.get("total") or 0)
    if not total:
        return "no plan"
    return f"{int(progress.get('done') or 0)}/{total} steps complete"


def _remember(ctx: typer.Context, session: dict[str, Any]) -> None:
    rt = runtime(ctx)
    config = rt.config
    config.server(rt.settings().url).session = str(session["id"])
    save_config(config)


@app.command("create", help="Create a session (the same as `acode session new`).")
@app.command("new")
@handles_errors
def new(
    ctx: typer.Context,
    title: Annotated[str, typer.Argument(help="A short title for the session.")],
    task: Annotated[str, typer.Option("--task", "-t", help="What the session is for.")] = "",
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            "-w",
            help="An existing directory on the server (absolute path); default: a fresh "
            "git workspace.",
        ),
    ] = None,
    repository: Annotated[
        str | None,
        typer.Option(
            "--repository",
            "-r",
            help="Work on a clone of this registered repository (`acode session repositories` "
            "lists them); default: an empty git workspace.",
        ),
    ] = None,
    risk: Annotated[RiskTier, typer.Option("--risk", help="Risk tier.")] = RiskTier.low,
    use: Annotated[
        bool, typer.Option("--use/--no-use", help="Make it the current session.")
    ] = True,
    as_json: JsonOption = False,
) -> None:
    """Create a session (it starts in the Default role) and make it current."""
    with runtime(ctx).client() as client:
        body: dict[str, Any] = {"title": title, "task": task, "risk_tier": risk.value}
        if workspace:
            body["workspace"] = workspace
        if repository:
            body["repository"] = repository
        session = client.post("/api/sessions/", body)
    if use:
        _remember(ctx, session)
    if as_json:
        emit_json(session)
        return
    console = out()
    console.print(
        f"Created session [bold]{esc(short_id(session['id']))}[/] {esc(session['title'])}"
    )
    console.print(f"ID: {esc(session['id'])}")
    console.print(f"Role: {esc(session['current_role']['name'])}")
    console.print(f"Workspace: {esc(session['workspace'])}")
    if session.get("repository"):
        console.print(f"Repository: {esc(session['repository'])}")
    if session.get("branch"):
        console.print(f"Branch: {esc(session['branch'])}")
    if use:
        console.print("This is now your current session.")


@app.command("list")
@handles_errors
def list_(
    ctx: typer.Context,
    role: Annotated[str | None, typer.Option("--role", help="Only sessions in this role.")] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="active, paused, completed or archived.")
    ] = None,
    owner: Annotated[str | None, typer.Option("--owner", help="Owner's username.")] = None,
    search: Annotated[
        str | None, typer.Option("--search", "-q", help="Text in title, task or last reason.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=500, help="At most this many.")] = 50,
    as_json: JsonOption = False,
) -> None:
    """List the sessions you can see, newest first (the current one is marked with *)."""
    rt = runtime(ctx)
    with rt.client() as client:
        page = client.get(
            "/api/sessions/",
            params={"role": role, "status": status, "owner": owner, "q": search, "limit": limit},
        )
        current = client.settings.session
    sessions = page.get("results", [])
    if as_json:
        emit_json(sessions)
        return
    console = out()
    if not sessions:
        console.print('No sessions. Create one with `acode session new "title"`.')
        return
    columns = ("", "ID", "Title", "Role", "Plan", "Status", "Owner", "Updated")
    listed = table(*columns, box=None, pad_edge=False)
    for s in sessions:
        mark = "*" if current and str(s["id"]).startswith(current) else ""
        listed.add_row(
            mark,
            short_id(s["id"]),
            esc(s["title"]),
            esc(s["current_role"]["name"]),
            plan_progress(s),
            esc(s["status"]),
            esc(s["owner"]),
            fmt_time(s["updated_at"]),
        )
    console.print(listed)
    total = int(page.get("count") or len(sessions))
    if total > len(sessions):
        console.print(f"(showing {len(sessions)} of {total}; use --limit)")


@app.command("repositories")
@handles_errors
def repositories(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """The registered repositories you may start a session on (`--repository NAME`)."""
    rows: list[dict[str, Any]] = fetch(ctx, "/api/repositories/")
    if as_json:
        emit_json(rows)
        return
    console = out()
    if not rows:
        console.print(
            "No repository is available to you; an administrator registers them. Without "
            "one, `acode session new` starts in an empty git workspace."
        )
        return
    listed = table("Name", "Branch", "Description", box=None, pad_edge=False)
    for r in rows:
        listed.add_row(esc(r["name"]), esc(r.get("default_branch") or "-"), esc(r["description"]))
    console.print(listed)


@app.command("use")
@handles_errors
def use(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="Session id or its first characters.")],
) -> None:
    """Make a session the current one for this server."""
    with runtime(ctx).client() as client:
        full = expand_session_id(client, session_id)
        session = client.get(f"/api/sessions/{full}/")
    _remember(ctx, session)
    out().print(
        f"Current session: [bold]{esc(short_id(session['id']))}[/] {esc(session['title'])} "
        f"(role {esc(session['current_role']['name'])})"
    )


@app.command("show")
@handles_errors
def show(
    ctx: typer.Context,
    session_id: Annotated[
        str | None,
        typer.Argument(
            help="Session id or prefix (default: the current session).", show_default=False
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Show a session: role, reason, plan, workspace."""
    with session_client(ctx, session_id) as (client, full):
        session = client.get(f"/api/sessions/{full}/")
    if as_json:
        emit_json(session)
        return
    console = out()
    console.print(f"Session: [bold]{esc(session['id'])}[/]")
    console.print(f"Title: {esc(session['title'])}")
    if session.get("task"):
        console.print(f"Task: {esc(session['task'])}")
    console.print(f"Owner: {esc(session['owner'])}")
    console.print(f"Status: {esc(session['status'])} (risk {esc(session['risk_tier'])})")
    console.print(f"Workspace: {esc(session['workspace'])}")
    console.print(f"Current Role: {esc(session['current_role']['name'])}")
    console.print(f"Since: {fmt_time(session['role_since'])}")
    console.print(f"Reason: {esc(session['last_reason'])}")
    console.print(f"Plan: {plan_progress(session)}")
    for step in session.get("plan") or []:
        mark = STEP_MARKS.get(step.get("status", ""), "·")
        console.print(f"  {mark} {step['number']}. {esc(step['title'])} ({esc(step['status'])})")
    console.print(f"Created: {fmt_time(session['created_at'])}")


SessionArg = Annotated[
    str | None,
    typer.Argument(help="Session id or prefix (default: the current session).", show_default=False),
]


@app.command("archive")
@handles_errors
def archive(ctx: typer.Context, session_id: SessionArg = None, as_json: JsonOption = False) -> None:
    """Archive a session: its checkout, layer and indexes are freed (its branch, commits and
    history are kept) and it is read-only until restored."""
    _archiving(ctx, session_id, as_json, "archive", "Archived session {short} {title}: its "
               "files are freed and it is read-only. `acode session restore` brings it back.")  # fmt: skip


@app.command("restore")
@handles_errors
def restore(ctx: typer.Context, session_id: SessionArg = None, as_json: JsonOption = False) -> None:
    """Restore an archived session: its branch is checked out again with every pending
    change, and it is active."""
    _archiving(ctx, session_id, as_json, "restore",
               "Restored session {short} {title}: its workspace is back at {workspace}.")  # fmt: skip


def _archiving(ctx: typer.Context, session_id: str | None, as_json: bool, action: str,
               said: str) -> None:  # fmt: skip
    with session_client(ctx, session_id) as (client, full):
        session = client.post(f"/api/sessions/{full}/{action}/")
    if as_json:
        emit_json(session)
        return
    out().print(said.format(short=f"[bold]{esc(short_id(session['id']))}[/]",
                            title=esc(session["title"]), workspace=esc(session["workspace"])))  # fmt: skip
