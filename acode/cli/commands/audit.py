"""``acode audit search|verify|export``: the hash-chained audit log."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from acode.cli.client import ApiClient
from acode.cli.errors import CliError, ExitCode, UsageError
from acode.cli.output import emit_json, err, esc, fmt_time, out, parse_time, plural, short_id
from acode.cli.runtime import (
    JsonOption,
    expand_session_id,
    fetch,
    handles_errors,
    role_names,
    runtime,
)

app = typer.Typer(help="Search, verify and export the audit log.", no_args_is_help=True)

EventTypeOption = Annotated[
    str | None,
    typer.Option(
        "--event-type",
        "-e",
        help="RoleTransition, TransitionDenied, RoleAction, ToolDenied, SessionCreated, "
        "PlanUpdated, ChangeRecorded, ChangesApproved, RoleEdited, PromptRejected, JobEvent ...",
    ),
]
SessionFilter = Annotated[
    str | None, typer.Option("--session", "-s", help="Only this session (id or prefix).")
]
RoleFilter = Annotated[str | None, typer.Option("--role", help="Only events in this role.")]
ActorFilter = Annotated[str | None, typer.Option("--actor", help="Only events by this actor.")]
LastOption = Annotated[
    int | None, typer.Option("--last", "-n", min=1, max=10000, help="Only the newest N events.")
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since", help="Only events since: an ISO time (2024-01-15T10:00) or an age (30m, 2h, 7d)."
    ),
]
UntilOption = Annotated[
    str | None, typer.Option("--until", help="Only events before: ISO time or age.")
]

# Per event type: the heading and the noun for the total line (scenario 9's wording).
TITLES: dict[str, tuple[str, str]] = {
    "RoleTransition": ("Role Transitions", "transition"),
    "TransitionDenied": ("Refused Role Transitions", "refused transition"),
    "RoleAction": ("Role Actions", "action"),
    "ToolDenied": ("Refused Tool Calls", "refused tool call"),
    "ToolDecision": ("Allowed Tool Calls", "allowed tool call"),
}
EPOCH = datetime.fromtimestamp(0, UTC)
_AGE = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_AGE_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_when(value: str | None, option: str) -> str | None:
    """An ISO timestamp for the API from an ISO time or an age like ``2h``."""
    if not value:
        return None
    match = _AGE.match(value)
    if match:
        delta = timedelta(**{_AGE_UNITS[match.group(2)]: int(match.group(1))})
        return (datetime.now(UTC) - delta).isoformat()
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageError(
            f"{option} {value!r} is neither an ISO time nor an age.",
            suggestion="Use e.g. 2024-01-15T10:00:00Z, 30m, 2h or 7d.",
        ) from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.isoformat()


def audit_params(
    client: ApiClient,
    event_type: str | None,
    session: str | None,
    role: str | None,
    actor: str | None,
    last: int | None,
    since: str | None,
    until: str | None,
) -> dict[str, str | int | None]:
    """Query parameters for the audit endpoints from the CLI's filter options."""
    return {
        "event_type": event_type,
        "session": expand_session_id(client, session) if session else None,
        "role": role,
        "actor": actor,
        "last": last,
        "since": parse_when(since, "--since"),
        "until": parse_when(until, "--until"),
    }


@app.command("search")
@handles_errors
def search(
    ctx: typer.Context,
    event_type: EventTypeOption = None,
    session: SessionFilter = None,
    role: RoleFilter = None,
    actor: ActorFilter = None,
    last: LastOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, help="Read at most this many events.")
    ] = 1000,
    as_json: JsonOption = False,
) -> None:
    """Search audit events, oldest first (like scenario 9's role transition log)."""
    with runtime(ctx).client() as client:
        params = audit_params(client, event_type, session, role, actor, last, since, until)
        events, more = _read_events(client, params, limit)
        names = role_names(client) if events and not as_json else {}
    # In time order across sessions: ``seq`` counts within one session's chain only.
    events.sort(key=_time_order)
    if as_json:
        emit_json(events)
        return
    heading, noun = TITLES.get(event_type or "", ("Events", "event"))
    console = out()
    console.print(f"Audit Log: {heading}")
    for event in events:
        console.print()
        for line in describe_event(event, names):
            console.print(esc(line))
    console.print()
    console.print(f"Total: {plural(len(events), noun)}")
    if more:
        err().print(f"(stopped after {limit} events; narrow the search or raise --limit)")


def _time_order(event: dict[str, Any]) -> tuple[datetime, int]:
    moment = parse_time(event.get("created_at")) or EPOCH
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)), int(event.get("id") or 0)


def _read_events(
    client: ApiClient, params: dict[str, str | int | None], limit: int
) -> tuple[list[dict[str, Any]], bool]:
    """Follow the cursor pages (newest first) until ``limit`` events are read."""
    events: list[dict[str, Any]] = []
    page = client.get("/api/audit/", params={**params, "page_size": min(limit, 1000)})
    while True:
        events.extend(page.get("results", []))
        if len(events) >= limit:
            return events[:limit], bool(page.get("next")) or len(events) > limit
        if not page.get("next"):
            return events, False
        page = client.get(page["next"])


def _reason(reason: str) -> str:
    """A reason on one line: the spec's denial block by its first line and suggestion."""
    lines = reason.splitlines()
    suggestion = [line for line in lines if line.startswith("Suggestion: ")]
    return " ".join(lines[:1] + suggestion) if len(lines) > 1 else reason


def describe_event(event: dict[str, Any], names: dict[str, str]) -> list[str]:
    """An audit event as the lines the spec shows (heading, then indented facts)."""
    kind = event["event_type"]
    details = event.get("details") or {}
    when = f"[{fmt_time(event['created_at'])}]"

    def name(slug: Any) -> str:
        return names.get(str(slug), str(slug).title()) if slug else "-"

    session = f"  Session ID: {short_id(event['session'])}" if event.get("session") else ""
    if kind == "RoleTransition":
        lines = [
            f"{when} {name(details.get('from_role'))} → {name(details.get('to_role'))}",
            f"  Reason: {details.get('reason', '')}",
            session,
            f"  User: {event['actor']}",
        ]
    elif kind == "TransitionDenied":
        lines = [
            f"{when} Refused: {name(event.get('role'))} → {name(event.get('target'))}",
            f"  Reason: {details.get('reason', '')}",
            f"  Error: {event.get('result', '')} {details.get('message', '')}",
            session,
            f"  User: {event['actor']}",
        ]
    elif kind in ("RoleAction", "ToolDenied"):
        prefix = "Denied: " if kind == "ToolDenied" else ""
        tool = details.get("tool") or details.get("tool_name") or "?"
        why = f"  Reason: {_reason(str(details['reason']))}" if details.get("reason") else ""
        lines = [
            f"{when} {prefix}{name(event.get('role'))}: {tool}",
            f"  Target: {event.get('target') or '-'}",
            f"  Result: {event.get('result') or '-'}",
            why,
            session,
            f"  User: {event['actor']}",
        ]
    else:
        lines = [
            f"{when} {kind}" + (f" ({name(event.get('role'))})" if event.get("role") else ""),
            f"  Target: {event.get('target') or '-'}",
            f"  Result: {event.get('result') or '-'}",
            session,
            f"  User: {event['actor']}",
        ]
    return [line for line in lines if line]


@app.command("verify")
@handles_errors
def verify(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Recompute the audit hash chain; exits 8 if any event was altered or removed."""
    report = fetch(ctx, "/api/audit/verify/")
    if as_json:
        emit_json(report)
        if not report["ok"]:
            raise typer.Exit(int(ExitCode.AUDIT_BROKEN))
        return
    if report["ok"]:
        out().print(
            f"[bold green][OK][/] Audit chain intact: {plural(report['checked'], 'event')} checked."
        )
        return
    raise CliError(
        f"First bad event: seq {report.get('first_bad_seq')} (id {report.get('first_bad_id')}): "
        f"{report.get('problem')}. {report.get('checked')} events checked.",
        title="Audit chain broken",
        suggestion="Audit rows must never change; restore the database from a backup and "
        "investigate who had write access.",
        exit_code=ExitCode.AUDIT_BROKEN,
    )


class ExportFormat(StrEnum):
    jsonl = "jsonl"
    csv = "csv"


@app.command("export")
@handles_errors
def export(
    ctx: typer.Context,
    format_: Annotated[
        ExportFormat, typer.Option("--format", "-f", help="jsonl (one event a line) or csv.")
    ] = ExportFormat.jsonl,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="File to write (default: stdout).", show_default=False),
    ] = None,
    event_type: EventTypeOption = None,
    session: SessionFilter = None,
    role: RoleFilter = None,
    actor: ActorFilter = None,
    last: LastOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
) -> None:
    """Export audit events (oldest first) with their hashes, streamed from the server."""
    with runtime(ctx).client() as client:
        params = audit_params(client, event_type, session, role, actor, last, since, until)
        with client.stream("/api/audit/export/", {**params, "format": format_.value}) as response:
            if output is None:
                stream = typer.get_text_stream("stdout")
                for chunk in response.iter_text():
                    stream.write(chunk)
                stream.flush()
                return
            written = 0
            with output.open("w", encoding="utf-8", newline="") as handle:
                for chunk in response.iter_text():
                    handle.write(chunk)
                    written += chunk.count("\n")
    rows = written - 1 if format_ is ExportFormat.csv else written
    out().print(f"Wrote {plural(max(rows, 0), 'event')} to {esc(output)} ({format_.value}).")
