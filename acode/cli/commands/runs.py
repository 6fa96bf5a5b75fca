"""``acode run "<request>"`` and ``acode run list|show|follow|cancel|approve|reject|answer``.

An orchestrated run moves the session through its roles stage by stage (plan, explore,
code, test, review, approval) on the server; the CLI starts it and follows it. Uses the
runs API: ``POST /api/sessions/{id}/runs/``, ``GET /api/runs/``, ``GET /api/runs/{id}/``,
``GET /api/runs/{id}/events/`` and ``POST /api/runs/{id}/answer|approve|reject|cancel/``.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from acode.cli.client import ApiClient, comma_list
from acode.cli.commands.run_follow import RunFollower, brief, follow_run
from acode.cli.commands.run_outcome import print_outcome, run_failure
from acode.cli.commands.run_show import print_approving, print_run, print_start
from acode.cli.commands.sessions import RiskTier
from acode.cli.errors import CliError, ExitCode
from acode.cli.output import (
    emit,
    emit_json,
    err,
    esc,
    fmt_time,
    out,
    print_error,
    said,
    short_id,
    table,
)
from acode.cli.runtime import (
    IntervalOption,
    JsonOption,
    SessionOption,
    handles_errors,
    one_starting_with,
    role_names,
    runtime,
    selected_session_id,
    server_must_offer,
    session_client,
)


class RunGroup(TyperGroup):
    """``acode run "REQUEST"`` is ``acode run start "REQUEST"``: anything that is not a
    subcommand's name starts a run (a request spelled like one: ``acode run start list``)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["start", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=RunGroup,
    help='Orchestrated runs: `acode run "REQUEST"` moves the session through Planner, '
    "Coder, Tester, Reviewer (and an approval for high risk) and shows it live.",
    no_args_is_help=True,
)

RunArgument = Annotated[str, typer.Argument(help="Run id, or its first characters.")]
VerboseOption = Annotated[
    bool, typer.Option("--verbose", "-v", help="Also show the tool calls of the run's jobs.")
]


def resolve_run(client: ApiClient, run: str) -> str:
    """A full run id: the id itself, or the one run you can see whose id starts with it."""
    try:
        return str(uuid.UUID(run.strip()))
    except ValueError:
        pass
    page = client.get("/api/runs/", params={"limit": 500})
    rows = page.get("results", []) if isinstance(page, dict) else page
    return one_starting_with(
        run,
        (r["id"] for r in rows),
        what="run you can see",
        suggestion="Run `acode run list` and use more characters of the id.",
    )


def _follower(
    client: ApiClient, run: dict[str, Any], *, as_json: bool, verbose: bool
) -> RunFollower:
    # Progress goes to stderr under --json so stdout holds only the final JSON.
    console = err() if as_json else out()
    return RunFollower(client, run, console, verbose=verbose, names=role_names(client))


def _follow_and_finish(
    client: ApiClient, follower: RunFollower, *, as_json: bool, interval: float
) -> None:
    run = follow_run(client, follower, interval, status_console=follower.console)
    finish(run, as_json=as_json)


def finish(run: dict[str, Any], *, as_json: bool) -> None:
    """Print the outcome (or the JSON) and end with the run's exit code."""
    if as_json:
        emit_json(run)
    else:
        print_outcome(out(), run)
    failure = run_failure(run)
    if failure is not None:
        if not as_json:
            print_error(failure)
        raise typer.Exit(int(failure.exit_code))


@app.command("start")
@handles_errors
def start(
    ctx: typer.Context,
    request: Annotated[str, typer.Argument(help="What you want done, in plain words.")],
    risk: Annotated[
        RiskTier | None,
        typer.Option(
            "--risk",
            help="Declared risk tier (default low); risk signals in the request, plan and "
            "changed paths can only raise it.",
            show_default=False,
        ),
    ] = None,
    template: Annotated[
        str | None,
        typer.Option("--template", help="Workflow template slug (default: the one for the tier)."),
    ] = None,
    no_follow: Annotated[
        bool, typer.Option("--no-follow", help="Start the run and return its id at once.")
    ] = False,
    verbose: VerboseOption = False,
    interval: IntervalOption = 0.5,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Start a run of the request in the session and follow it until it ends or pauses.

    Prints each role transition, the plan, every review verdict and test result, and
    the outcome. Exits 0 when the run succeeds or waits for a person (an answer, an
    approval), 7 when it fails, is rejected or cancelled; Ctrl-C offers to cancel it.
    """
    with session_client(ctx, session) as (client, sid):
        body: dict[str, Any] = {"request": request}
        if risk is not None:
            body["risk"] = risk.value
        if template:
            body["template"] = template
        lacks = "has no runs API yet (POST /api/sessions/{id}/runs/)"
        title = "Orchestrated runs not available on this server"
        with server_must_offer(client, lacks=lacks, update="orchestrated runs", title=title):
            run: dict[str, Any] = client.post(f"/api/sessions/{sid}/runs/", body)
        if no_follow:
            if as_json:
                emit_json(run)
                return
            console = out()
            console.print(
                f"Run [bold]{esc(run['id'])}[/] {esc(said(run['status']))} "
                f"({esc(run['effective_tier'])} risk, template {esc(run['template'])})."
            )
            console.print(f"Follow it with `acode run follow {short_id(run['id'])}`.")
            return
        if not as_json:
            print_start(run)
        follower = _follower(client, run, as_json=as_json, verbose=verbose)
        _follow_and_finish(client, follower, as_json=as_json, interval=interval)


@app.command("follow")
@handles_errors
def follow(
    ctx: typer.Context,
    run: RunArgument,
    verbose: VerboseOption = False,
    interval: IntervalOption = 0.5,
    as_json: JsonOption = False,
) -> None:
    """Follow a run live from its start until it ends or pauses (as `acode run` does)."""
    with runtime(ctx).client() as client:
        data = client.get(f"/api/runs/{resolve_run(client, run)}/")
        follower = _follower(client, data, as_json=as_json, verbose=verbose)
        _follow_and_finish(client, follower, as_json=as_json, interval=interval)


@app.command("list")
@handles_errors
def list_runs(
    ctx: typer.Context,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            help="Comma-separated statuses: running, awaiting_input, awaiting_approval, "
            "blocked, succeeded, failed, rejected, cancelled.",
        ),
    ] = None,
    every_session: Annotated[
        bool, typer.Option("--all", help="Runs of every session you can see.")
    ] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, max=500, help="At most this many.")] = 50,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """The runs of the current (or given) session, newest first."""
    with runtime(ctx).client(session) as client:
        sid = "" if every_session else selected_session_id(client, required=False)
        page = client.get(
            "/api/runs/",
            params={"session": sid or None, "status": comma_list(status), "limit": limit},
        )
    rows: list[dict[str, Any]] = page.get("results", []) if isinstance(page, dict) else page
    if as_json:
        emit_json(rows)
        return
    console = out()
    if not rows:
        console.print('No runs. Start one with `acode run "request"`.')
        return
    columns = ("ID", "Session", "Status", "Risk", "Stage", "Request", "Created")
    listed = table(*columns, box=None, pad_edge=False)
    for r in rows:
        stage = r.get("current_stage") or {}
        where = f"{stage.get('purpose')} ({stage.get('role_name') or '-'})" if stage else "-"
        listed.add_row(
            short_id(r["id"]),
            short_id(r["session"]),
            esc(said(r["status"])) + (f" {esc(r['error_code'])}" if r.get("error_code") else ""),
            esc(r.get("effective_tier")),
            esc(where),
            esc(brief(r["request"], 50)),
            fmt_time(r.get("created_at")),
        )
    console.print(listed)


@app.command("show")
@handles_errors
def show(ctx: typer.Context, run: RunArgument, as_json: JsonOption = False) -> None:
    """A run: its risk, stages with verdicts and evidence, questions, approvals, changes."""
    with runtime(ctx).client() as client:
        data: dict[str, Any] = client.get(f"/api/runs/{resolve_run(client, run)}/")
    emit(data, as_json=as_json, render=print_run)


@app.command("cancel")
@handles_errors
def cancel(ctx: typer.Context, run: RunArgument, as_json: JsonOption = False) -> None:
    """Cancel a run: it stops when its current stage ends and hands the session back to Default."""
    with runtime(ctx).client() as client:
        data: dict[str, Any] = client.post(f"/api/runs/{resolve_run(client, run)}/cancel/", {})
    if as_json:
        emit_json(data)
        return
    rid = short_id(data["id"])
    if data["status"] == "running":
        out().print(f"Cancel requested for run {rid}; it stops when its current stage ends.")
    else:
        out().print(f"Run {rid}: {esc(said(data['status']))}.")


@app.command("approve")
@handles_errors
def approve(
    ctx: typer.Context,
    run: RunArgument,
    digest: Annotated[
        str | None,
        typer.Option(
            "--digest",
            help="The digest you approve (default: the one waiting now, after showing what it "
            "covers).",
        ),
    ] = None,
    reason: Annotated[str, typer.Option("--reason", "-r", help="Why (recorded).")] = "",
    as_json: JsonOption = False,
) -> None:
    """Approve a run waiting at its approval gate: commits exactly the changes shown.

    Needs the 'approve run' permission, and you cannot approve a run you started.
    """
    with runtime(ctx).client() as client:
        run_id = resolve_run(client, run)
        if not digest:
            current: dict[str, Any] = client.get(f"/api/runs/{run_id}/")
            pending = current.get("pending_approval") or {}
            if current["status"] != "awaiting_approval" or not pending.get("digest"):
                raise CliError(
                    f"Run {short_id(run_id)} is {said(current['status'])}, not waiting for approval.",
                    title="Nothing to approve",
                    suggestion=f"See the run with `acode run show {short_id(run_id)}`.",
                    exit_code=ExitCode.REFUSED,
                )
            digest = str(pending["digest"])
            # Someone who may not approve gets the server's refusal without a preview.
            if not as_json and current.get("can_approve"):
                print_approving(current, digest)
        body = {"digest": digest, **({"reason": reason} if reason else {})}
        data: dict[str, Any] = client.post(f"/api/runs/{run_id}/approve/", body)
    if as_json:
        emit_json(data)
        return
    out().print(
        f"[bold green][APPROVED][/] Run {short_id(run_id)} approved (digest {esc(digest[:12])})."
    )
    print_outcome(out(), data)


@app.command("reject")
@handles_errors
def reject(
    ctx: typer.Context,
    run: RunArgument,
    reason: Annotated[str, typer.Option("--reason", "-r", help="Why (recorded; required).")],
    as_json: JsonOption = False,
) -> None:
    """Reject a run at its approval gate: it ends, its changes stay pending, uncommitted."""
    with runtime(ctx).client() as client:
        run_id = resolve_run(client, run)
        data: dict[str, Any] = client.post(f"/api/runs/{run_id}/reject/", {"reason": reason})
    if as_json:
        emit_json(data)
        return
    out().print(f"Run {short_id(run_id)} {esc(said(data['status']))}: {esc(reason)}")


@app.command("answer")
@handles_errors
def answer(
    ctx: typer.Context,
    run: RunArgument,
    text: Annotated[str, typer.Argument(help="Your answer to the run's question.")],
    follow_on: Annotated[
        bool, typer.Option("--follow/--no-follow", help="Follow the run after answering.")
    ] = True,
    verbose: VerboseOption = False,
    interval: IntervalOption = 0.5,
    as_json: JsonOption = False,
) -> None:
    """Answer the question a run is waiting on; the run goes on from where it stopped."""
    with runtime(ctx).client() as client:
        run_id = resolve_run(client, run)
        before: dict[str, Any] = client.get(f"/api/runs/{run_id}/")
        follower = _follower(client, before, as_json=as_json, verbose=verbose)
        if follow_on:
            follower.skip_past()  # print only what the answer sets going
        data: dict[str, Any] = client.post(f"/api/runs/{run_id}/answer/", {"answer": text})
        if not as_json:
            question = (before.get("open_question") or {}).get("question") or before["message"]
            out().print(f"Answered run {short_id(run_id)}: {esc(question)}")
            out().print(f"  → {esc(text)}")
        if follow_on:
            _follow_and_finish(client, follower, as_json=as_json, interval=interval)
            return
    if as_json:
        emit_json(data)
    else:
        out().print(f"Run {short_id(run_id)} is {esc(said(data['status']))}.")
