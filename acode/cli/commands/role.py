"""``acode role current|set|history|transitions``: the role of the current session;
``acode role test``: run role policy examples; ``acode role replay``: preview a change;
``acode role drafts|publish|reject``: drafts of protected roles."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from acode.cli.client import ApiClient
from acode.cli.commands import role_diff, role_drafts
from acode.cli.commands import roles as roles_commands
from acode.cli.commands.role_replay import (
    ChangeFileOption,
    ChangeSetsOption,
    draft_of,
    print_replay_report,
)
from acode.cli.errors import ExitCode
from acode.cli.output import emit, emit_json, esc, fmt_time, out
from acode.cli.runtime import (
    JsonOption,
    SessionOption,
    handles_errors,
    role_names,
    runtime,
    send,
    session_client,
)
from acode.policy_report import report_lines

app = typer.Typer(
    help="The current session's role: show it, change it, its history and options.",
    no_args_is_help=True,
)


@app.command("current")
@handles_errors
def current(ctx: typer.Context, session: SessionOption = None, as_json: JsonOption = False) -> None:
    """Show the session's current role, since when and why."""
    with session_client(ctx, session) as (client, sid):
        data = client.get(f"/api/sessions/{sid}/")
    if as_json:
        emit_json(
            {
                "session": data["id"],
                "role": data["current_role"],
                "role_version": data["role_version"],
                "since": data["role_since"],
                "reason": data["last_reason"],
            }
        )
        return
    console = out()
    console.print(f"Current Role: [bold]{esc(data['current_role']['name'])}[/]")
    console.print(f"Since: {fmt_time(data['role_since'])}")
    console.print(f"Reason: {esc(data['last_reason'])}")


def transition(
    client: ApiClient, session_id: str, role: str, reason: str, expect: str | None = None
) -> dict[str, Any]:
    """POST a transition; the server checks the rules and answers 409 when refused."""
    body: dict[str, Any] = {"to_role": role, "reason": reason}
    if expect:
        body["expected_role"] = expect
    result: dict[str, Any] = client.post(f"/api/sessions/{session_id}/transition/", body)
    return result


@app.command("set")
@handles_errors
def set_(
    ctx: typer.Context,
    role: Annotated[str, typer.Argument(help="Role to change to (slug or name, any case).")],
    reason: Annotated[
        str, typer.Option("--reason", "-r", help="Why the role changes (recorded and audited).")
    ],
    expect: Annotated[
        str | None,
        typer.Option(
            "--expect",
            help="Only change if the session is still in this role (guards against races).",
        ),
    ] = None,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Change the session's role. Refused transitions exit 4 and list the valid ones."""
    with session_client(ctx, session) as (client, sid):
        result = transition(client, sid, role, reason, expect)
    if as_json:
        emit_json(result)
        return
    console = out()
    if not result["changed"]:
        console.print(esc(result["message"]))
        return
    step = result["transition"]
    console.print(f"[bold green][SUCCESS][/] {esc(result['message'])}")
    console.print(f"Reason: {esc(step['reason'])}")
    console.print(f"Timestamp: {fmt_time(step['created_at'])}")


@app.command("history")
@handles_errors
def history(ctx: typer.Context, session: SessionOption = None, as_json: JsonOption = False) -> None:
    """List every role the session has been in, with reasons, oldest first."""
    with session_client(ctx, session) as (client, sid):
        rows = client.get(f"/api/sessions/{sid}/history/")
        names = role_names(client) if not as_json else {}
    if as_json:
        emit_json(rows)
        return
    console = out()
    console.print("Role Transition History:")
    for index, row in enumerate(rows, start=1):
        target = names.get(row["to_role"], row["to_role"])
        step = target
        if row.get("from_role"):
            step = f"{names.get(row['from_role'], row['from_role'])} → {target}"
        console.print()
        console.print(esc(f"{index}. [{fmt_time(row['created_at'])}] {step}"))
        console.print(f"   Reason: {esc(row['reason'])}")
        console.print(f"   By: {esc(row['actor'])}")


@app.command("transitions")
@handles_errors
def transitions(
    ctx: typer.Context, session: SessionOption = None, as_json: JsonOption = False
) -> None:
    """List the transitions out of the current role and whether each is allowed now."""
    with session_client(ctx, session) as (client, sid):
        options = client.get(f"/api/sessions/{sid}/transitions/")
        current_name = client.get(f"/api/sessions/{sid}/")["current_role"]["name"]
    if as_json:
        emit_json(options)
        return
    console = out()
    console.print(f"Valid transitions from {esc(current_name)}:")
    for t in options:
        line = f"{current_name} → {t['to_role_name']} ({t['condition']})"
        if t.get("suggested_for"):
            line += f" — suggested for this task: {', '.join(t['suggested_for'])}"
        if t["allowed_now"]:
            console.print(f"  [green]✓[/] {esc(line)}")
        else:
            console.print(f"  [red]✗[/] {esc(line)} — not now: {esc(t['unmet'])}")


# The spec's spelling of ``acode roles list|show``: the same commands.
app.command("list", help="Same as `acode roles list` (the spec's spelling).")(
    roles_commands.list_roles
)
app.command("show", help="Same as `acode roles show` (the spec's spelling).")(roles_commands.show)


@app.command("test")
@handles_errors
def test(
    ctx: typer.Context,
    file: Annotated[
        Path | None,
        typer.Argument(help="A roles YAML file ('-': stdin); none: the server's stored roles."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Run role policy examples (of a file before you import it, or the stored roles) with
    the server's own tool decision; exits 1 when one fails."""
    text = roles_commands.read_text_input(file) if file is not None else None
    with runtime(ctx).client() as client:
        if text is None:
            report = client.get("/api/roles/test/")
        else:
            report = client.post("/api/roles/test/", content=text, content_type="application/yaml")
    emit(report, as_json=as_json, render=print_policy_report)
    if not report["passed"]:
        raise typer.Exit(int(ExitCode.OTHER))


@app.command("replay")
@handles_errors
def replay(
    ctx: typer.Context,
    role: roles_commands.RoleArgument,
    file: ChangeFileOption = None,
    sets: ChangeSetsOption = None,
    since: Annotated[str | None, typer.Option(help="ISO 8601 time: from (inclusive).")] = None,
    until: Annotated[str | None, typer.Option(help="ISO 8601 time: to (exclusive).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Preview a change to a role: its recorded tool decisions decided again under the
    draft, what would change, grouped by tool and rule. Nothing is saved."""
    body = {"draft": draft_of(file, sets or []), "since": since, "until": until}
    report = send(ctx, f"/api/roles/{role}/replay/", body)
    emit(report, as_json=as_json, render=print_replay_report)


def print_policy_report(report: dict[str, Any]) -> None:
    """Each example with its decision and the rule that decided; failures with why."""
    console = out()
    for line in report_lines(report, marks=("[green]ok[/]  ", "[red]FAIL[/]"), escape=esc):
        console.print(line)


# Drafts of protected roles: listed, published or rejected (``role_drafts``).
app.command("drafts")(role_drafts.drafts)
app.command("publish")(role_drafts.publish)
app.command("reject")(role_drafts.reject)
# What a change grants, with counterexamples (``role_diff``).
app.command("diff")(role_diff.diff)
