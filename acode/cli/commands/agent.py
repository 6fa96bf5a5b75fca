"""``acode agent "<request>"``: run a role-scoped job and follow it live.

Uses the jobs API: ``POST /api/sessions/{id}/jobs/``, ``GET /api/jobs/{id}/``,
``GET /api/jobs/{id}/events/?after=SEQ`` and ``POST /api/jobs/{id}/cancel/``.
"""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

import typer
from rich.console import Console

from acode.cli.client import ApiClient
from acode.cli.commands.role import transition
from acode.cli.errors import ApiError, CliError, ExitCode
from acode.cli.output import (
    ask_to_cancel,
    code_entry,
    emit_json,
    err,
    esc,
    out,
    plural,
    print_denial,
    print_error,
    said,
    short_id,
)
from acode.cli.runtime import (
    IntervalOption,
    JsonOption,
    SessionOption,
    handles_errors,
    server_must_offer,
    session_client,
)

FINAL_STATUSES = ("succeeded", "failed", "cancelled", "limit_exceeded")


@handles_errors
def agent(
    ctx: typer.Context,
    request: Annotated[str, typer.Argument(help="What you want done, in plain words.")],
    role: Annotated[
        str | None,
        typer.Option("--role", help="Transition to this role first, then run the job in it."),
    ] = None,
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="Queue the job and return its id at once.")
    ] = False,
    interval: IntervalOption = 0.5,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run a request as a job in the session's role and show its progress live.

    Role changes, tool calls and refused tool calls are shown as they happen; Ctrl-C
    offers to cancel the job. Exits 7 if the job fails, is cancelled or hits a limit.
    """
    # Progress goes to stderr under --json so stdout holds only the final JSON.
    console = err() if as_json else out()
    with session_client(ctx, session) as (client, sid):
        if role:
            result = transition(client, sid, role, f"acode agent --role {role}")
            if result["changed"]:
                step = result["transition"]
                console.print(
                    f"[bold magenta][ROLE TRANSITION][/] {esc(result['message'].split(': ', 1)[-1])}"
                    f" (Reason: {esc(step['reason'])})"
                )
        job = _create_job(client, sid, request)
        if no_wait:
            if as_json:
                emit_json(job)
            else:
                console.print(
                    f"Job [bold]{esc(job['id'])}[/] {esc(said(job['status']))} in role "
                    f"{esc(job['role'])}."
                )
                console.print(f"Follow it at {esc(client.settings.url)}/api/jobs/{esc(job['id'])}/")
            return
        job = _follow(client, job, console, interval)
    _finish(job, console, as_json)


def _create_job(client: ApiClient, session_id: str, request: str) -> dict[str, Any]:
    lacks = "has no jobs API yet (POST /api/sessions/{id}/jobs/)"
    title = "Agent runs not available on this server"
    with server_must_offer(client, lacks=lacks, update="the jobs API", title=title):
        job: dict[str, Any] = client.post(f"/api/sessions/{session_id}/jobs/", {"request": request})
    return job


def _events(page: Any) -> list[dict[str, Any]]:
    """The events of a ``/events/`` answer (a list, or a page with results/events)."""
    if isinstance(page, dict):
        page = page.get("results", page.get("events", []))
    return [e for e in page or [] if isinstance(e, dict)]


def _follow(
    client: ApiClient, job: dict[str, Any], console: Console, interval: float
) -> dict[str, Any]:
    """Poll events and status until the job ends; Ctrl-C offers to cancel it."""
    after = 0
    job_id = job["id"]
    try:
        with console.status(
            f"Job {short_id(job_id)} {said(job['status'])} in {job['role']}…"
        ) as spinner:
            while True:
                # Read the status before the events, so once the status is final the
                # events read right after it include the last ones.
                job = client.get(f"/api/jobs/{job_id}/")
                for event in _events(
                    client.get(f"/api/jobs/{job_id}/events/", params={"after": after})
                ):
                    after = max(after, int(event.get("seq") or 0))
                    render_event(console, event, role=str(job.get("role", "?")))
                if job["status"] in FINAL_STATUSES:
                    return job
                spinner.update(f"Job {short_id(job_id)} {said(job['status'])} in {job['role']}…")
                time.sleep(interval)
    except KeyboardInterrupt:
        _offer_cancel(client, job_id, console)
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None


def _offer_cancel(client: ApiClient, job_id: str, console: Console) -> None:
    if ask_to_cancel(f"job {short_id(job_id)}"):
        try:
            client.post(f"/api/jobs/{job_id}/cancel/")
        except ApiError as error:
            if error.code != "ACODE-JOB-006":  # finished meanwhile: nothing left to cancel
                raise
            console.print(f"Job {esc(job_id)} had already finished.")
            return
        console.print(f"Cancel requested for job {esc(job_id)}; it stops at its next step.")
    else:
        console.print(
            f"Job {esc(job_id)} keeps running; see {esc(client.settings.url)}/api/jobs/"
            f"{esc(job_id)}/"
        )


def _brief(data: Any, limit: int = 160) -> str:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_event(console: Console, event: dict[str, Any], *, role: str = "?") -> None:
    """One job event as a line: role changes and refusals stand out, the rest is quiet."""
    kind = str(event.get("kind") or "")
    raw = event.get("data")
    data: dict[str, Any] = raw if isinstance(raw, dict) else {"value": raw}
    tool = data.get("tool") or data.get("name") or ""
    if kind == "tool_denied":
        why = str(data.get("reason") or data.get("message") or "")
        code = f" ({data['code']})" if data.get("code") else ""
        if why.startswith("[ERROR] "):  # the spec's denial: its block, as the model saw it
            print_denial(console, why, str(data.get("code") or ""))
            return
        # The executor's reason is usually a full sentence naming the tool and role.
        what = why if tool and tool in why else f"Tool {tool!r} refused in role {role}: {why}"
        console.print(f"[bold red][DENIED][/] {esc(what)}{esc(code)}")
    elif "role" in kind and ("change" in kind or "transition" in kind):
        console.print(
            f"[bold magenta][ROLE TRANSITION][/] {esc(data.get('from_role', '?'))} → "
            f"{esc(data.get('to_role', '?'))} (Reason: {esc(data.get('reason', ''))})"
        )
    elif kind == "tool_call":
        arguments = data.get("arguments") or data.get("args") or {}
        console.print(f"[cyan]⚙ {esc(tool)}[/] {esc(_brief(arguments, 100))}")
    elif kind == "tool_result":
        outcome = " ".join(str(data.get(k) or "") for k in ("status", "target")).strip()
        console.print(f"[dim]  ↳ {esc(tool)} {esc(_brief(outcome or data, 120))}[/]")
    elif kind == "llm_request":
        console.print(
            f"[dim]→ asking the model ({esc(data.get('message_count', '?'))} messages)[/]"
        )
    elif kind == "llm_response":
        calls = data.get("tool_calls") or []
        asked = f", {len(calls)} tool call(s)" if calls else ""
        console.print(
            f"[dim]← {esc(data.get('model') or 'model')}: {esc(data.get('tokens_in', 0))} tokens "
            f"in, {esc(data.get('tokens_out', 0))} out{esc(asked)}[/]"
        )
    elif kind == "context_built":
        files = data.get("files")
        count = len(files) if isinstance(files, list) else files
        files_text = plural(count, "file") if isinstance(count, int) else "? files"
        console.print(
            f"[dim]Context: {esc(files_text)}, "
            f"{esc(data.get('token_count', '?'))} tokens ({esc(data.get('strategy', '-'))})[/]"
        )
    elif kind == "prompt_composed":
        parts = data.get("components")
        text = " + ".join(map(str, parts)) if isinstance(parts, list) else _brief(data)
        console.print(f"[dim]Prompt: {esc(text)}[/]")
    elif kind == "limit_hit":
        what = data.get("reason") or data.get("tool") or _brief(data)
        console.print(f"[bold yellow][LIMIT][/] {esc(data.get('limit', 'limit'))}: {esc(what)}")
    elif kind == "status":
        console.print(f"[dim]Job {esc(said(data.get('status')) or _brief(data))}[/]")
    elif kind == "note":
        console.print(esc(data.get("text") or data.get("message") or _brief(data)))
    else:
        console.print(f"[dim]{esc(kind)}: {esc(_brief(data))}[/]")


def _finish(job: dict[str, Any], console: Console, as_json: bool) -> None:
    status = job["status"]
    if as_json:
        emit_json(job)
    else:
        if job.get("result"):
            console.print()
            typer.echo(job["result"] if isinstance(job["result"], str) else _brief(job["result"]))
        console.print()
        console.print(
            f"[dim]{esc(said(status))} in role {esc(job.get('role'))} · {job.get('llm_calls', 0)} LLM "
            f"calls · {int(job.get('tokens_in') or 0):,} tokens in / "
            f"{int(job.get('tokens_out') or 0):,} out · {esc(job.get('model') or '-')} "
            f"({esc(job.get('provider') or '-')})[/]"
        )
    if status != "succeeded":
        code = str(job.get("error_code") or "")
        title, hint = code_entry(code) if code else ("", "")
        error = CliError(
            str(job.get("error_message") or f"The job ended {said(status)}."),
            title=f"Job {said(status)}" + (f": {code} {title}" if code else ""),
            suggestion=hint,
            exit_code=ExitCode.JOB_FAILED,
        )
        if not as_json:
            print_error(error)
        raise typer.Exit(int(error.exit_code))
