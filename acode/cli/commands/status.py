"""``acode status``: server, user, current session, role, plan progress and jobs."""

from __future__ import annotations

from typing import Any

import typer

from acode.cli.client import ApiClient
from acode.cli.commands.sessions import plan_progress
from acode.cli.errors import ApiError
from acode.cli.output import emit_json, esc, fmt_time, out, short_id
from acode.cli.runtime import (
    JsonOption,
    SessionOption,
    handles_errors,
    runtime,
    selected_session_id,
)

ACTIVE_JOB_STATUSES = ("queued", "running")


def active_jobs(client: ApiClient, session_id: str) -> list[dict[str, Any]] | None:
    """Queued and running jobs of the session, or None when the server has no jobs API.

    ``GET /api/sessions/{id}/jobs/`` lists the session's recent jobs (a list, or a page
    with ``results``); the active ones are picked here. An older server without the
    route gets "no jobs API" instead of a failure.
    """
    try:
        page = client.get(f"/api/sessions/{session_id}/jobs/")
    except ApiError as error:
        if error.endpoint_missing or error.http_status in (404, 405):
            return None
        raise
    jobs = page.get("results", []) if isinstance(page, dict) else page
    return [j for j in jobs if j.get("status") in ACTIVE_JOB_STATUSES]


@handles_errors
def status(ctx: typer.Context, session: SessionOption = None, as_json: JsonOption = False) -> None:
    """Show the current role, since when and why, plan progress and running jobs."""
    with runtime(ctx).client(session) as client:
        me = client.get("/api/me/")
        sid = selected_session_id(client, required=False)
        data = client.get(f"/api/sessions/{sid}/") if sid else None
        jobs = active_jobs(client, sid) if sid else None
        url = client.settings.url
    if as_json:
        emit_json({"url": url, "user": me.get("username"), "session": data, "jobs": jobs})
        return
    console = out()
    console.print(f"Server: {esc(url)} (user {esc(me.get('username'))})")
    if data is None:
        console.print(
            'No current session. Create one with `acode session new "title"` or pick one '
            "with `acode session use ID`."
        )
        return
    console.print(
        f"Session: {esc(short_id(data['id']))} {esc(data['title'])} ({esc(data['status'])})"
    )
    console.print(f"Current Role: [bold]{esc(data['current_role']['name'])}[/]")
    console.print(f"Since: {fmt_time(data['role_since'])}")
    console.print(f"Reason: {esc(data['last_reason'])}")
    console.print(f"Active Plan: {plan_progress(data)}")
    if jobs is None:
        console.print("Jobs: (this server has no jobs API yet)")
    elif not jobs:
        console.print("Jobs: none queued or running")
    else:
        console.print(f"Jobs: {len(jobs)} queued or running")
        for job in jobs:
            console.print(
                f"  - {esc(short_id(job.get('id')))} {esc(job.get('status'))} in "
                f"{esc(job.get('role'))}: {esc(str(job.get('request', ''))[:60])}"
            )
