"""``acode job list|show|follow|cancel|resume``: jobs of the current session, after ``agent
--no-wait``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from acode.cli.client import ApiClient, comma_list
from acode.cli.commands.agent import _events, _finish, _follow, render_event
from acode.cli.output import emit_json, esc, fmt_time, out, said, short_id, table
from acode.cli.runtime import (
    IntervalOption,
    JsonOption,
    SessionOption,
    handles_errors,
    one_starting_with,
    runtime,
    selected_session_id,
    session_client,
)

app = typer.Typer(
    help="List, show, follow, cancel and resume the session's agent jobs.", no_args_is_help=True
)

JobArgument = Annotated[
    str, typer.Argument(help="Job id, or its first characters (current session).")
]


def _resolve(client: ApiClient, job: str) -> str:
    """A full job id: the id itself, or the one job of the session that starts with it."""
    if len(job) == 36:
        return job
    sid = selected_session_id(client)
    return one_starting_with(
        job,
        (j["id"] for j in client.get(f"/api/sessions/{sid}/jobs/")),
        what=f"job of session {short_id(sid)}",
        suggestion="Run `acode job list` and use more characters of the id.",
    )


@app.command("list")
@handles_errors
def list_jobs(
    ctx: typer.Context,
    status: Annotated[
        str | None, typer.Option("--status", help="Comma-separated statuses, e.g. queued,running")
    ] = None,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """The session's newest jobs."""
    with session_client(ctx, session) as (client, sid):
        jobs: list[dict[str, Any]] = client.get(
            f"/api/sessions/{sid}/jobs/", params={"status": comma_list(status)}
        )
    if as_json:
        emit_json(jobs)
        return
    if not jobs:
        out().print('No jobs. Start one with `acode agent "request"`.')
        return
    rows = table(
        "ID", "Status", "Role", "Request", "LLM calls", "Created", box=None, pad_edge=False
    )
    for job in jobs:
        rows.add_row(
            short_id(job["id"]),
            esc(said(job["status"])),
            esc(job["role"]),
            esc(str(job["request"])[:60]),
            str(job["llm_calls"]),
            fmt_time(job["created_at"]),
        )
    out().print(rows)


@app.command("show")
@handles_errors
def show(
    ctx: typer.Context, job: JobArgument, session: SessionOption = None, as_json: JsonOption = False
) -> None:
    """A job with its events."""
    with runtime(ctx).client(session) as client:
        data: dict[str, Any] = client.get(f"/api/jobs/{_resolve(client, job)}/")
    if as_json:
        emit_json(data)
        return
    console = out()
    console.print(f"Job: {esc(data['id'])}")
    console.print(
        f"Status: {esc(said(data['status']))}"
        + (f" ({esc(data['error_code'])})" if data.get("error_code") else "")
    )
    console.print(f"Role: {esc(data['role'])}   Request: {esc(data['request'])}")
    console.print(
        f"LLM calls: {data['llm_calls']} · tokens {data['tokens_in']} in / {data['tokens_out']} out · "
        f"{esc(data.get('model') or '-')} ({esc(data.get('provider') or '-')})"
    )
    console.print()
    for event in _events(data.get("events")):
        render_event(console, event, role=str(data.get("role", "?")))
    if data.get("result"):
        console.print()
        typer.echo(data["result"])


@app.command("follow")
@handles_errors
def follow(
    ctx: typer.Context,
    job: JobArgument,
    interval: IntervalOption = 0.5,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Follow a job live until it ends (as `acode agent` does); Ctrl-C offers to cancel it."""
    with runtime(ctx).client(session) as client:
        data = client.get(f"/api/jobs/{_resolve(client, job)}/")
        data = _follow(client, data, out(), interval)
    _finish(data, out(), as_json)


@app.command("cancel")
@handles_errors
def cancel(ctx: typer.Context, job: JobArgument, session: SessionOption = None) -> None:
    """Ask a queued or running job to stop."""
    with runtime(ctx).client(session) as client:
        job_id = _resolve(client, job)
        data = client.post(f"/api/jobs/{job_id}/cancel/")
    out().print(
        f"Job {esc(short_id(job_id))}: {esc(said(data['status']))}"
        + (" (stops at its next step)" if data["status"] == "running" else "")
    )


@app.command("resume")
@handles_errors
def resume(
    ctx: typer.Context,
    job: JobArgument,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Follow the new job.")] = True,
    interval: IntervalOption = 0.5,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Continue a job that stopped at a limit (its budget, or a loop) with a fresh budget:
    a new job in the same role, on the same request, shown what the stopped one did."""
    with runtime(ctx).client(session) as client:
        stopped = _resolve(client, job)
        data = client.post(f"/api/jobs/{stopped}/resume/")
        if not as_json:
            out().print(
                f"Job {esc(short_id(data['id']))} resumes job {esc(short_id(stopped))} in role "
                f"{esc(data['role'])} with a fresh budget."
            )
        if wait:
            data = _follow(client, data, out(), interval)
    if wait:
        _finish(data, out(), as_json)
    elif as_json:
        emit_json(data)


__all__ = ["app"]
