"""``acode plan show|set|step``: the current session's plan.

Uses ``GET``/``PUT /api/sessions/{id}/plan/`` and ``PATCH
/api/sessions/{id}/plan/steps/{n}/``; the server validates every step (ACODE-SES-004).
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from acode.cli.commands.sessions import STEP_MARKS
from acode.cli.errors import UsageError
from acode.cli.output import emit, emit_json, esc, out, plural, said
from acode.cli.runtime import JsonOption, SessionOption, handles_errors, session_client
from acode.yamldoc import load_yaml

app = typer.Typer(
    help="The current session's plan: show it, set it, mark a step's status.",
    no_args_is_help=True,
)


class StepStatus(StrEnum):
    pending = "pending"
    in_progress = "in_progress"
    done = "done"
    blocked = "blocked"
    skipped = "skipped"


def print_steps(steps: list[dict[str, Any]]) -> None:
    """The plan with each step's status, files and dependencies."""
    console = out()
    if not steps:
        console.print(
            "No plan. Set one with `acode plan set STEP...` (or --file plan.yaml), or ask the "
            'Planner: `acode role set Planner -r "..."` then `acode agent "request"`.'
        )
        return
    done = sum(1 for s in steps if s.get("status") in ("done", "skipped"))
    console.print(f"Plan: {done}/{len(steps)} steps complete")
    for step in steps:
        mark = STEP_MARKS.get(str(step.get("status")), "·")
        console.print(
            f"  {mark} Step {step['number']}: {esc(step['title'])} ({esc(said(step['status']))})"
        )
        if step.get("detail"):
            console.print(f"      {esc(step['detail'])}")
        if step.get("files"):
            console.print(f"      Files: {esc(', '.join(step['files']))}")
        if step.get("depends_on"):
            console.print(
                f"      Depends on: {esc(', '.join(f'step {n}' for n in step['depends_on']))}"
            )


@app.command("show")
@handles_errors
def show(ctx: typer.Context, session: SessionOption = None, as_json: JsonOption = False) -> None:
    """Show the session's plan with each step's status."""
    with session_client(ctx, session) as (client, sid):
        steps: list[dict[str, Any]] = client.get(f"/api/sessions/{sid}/plan/")
    emit(steps, as_json=as_json, render=print_steps)


def steps_from_file(path: Path) -> list[Any]:
    """Steps from a JSON or YAML file: a list of steps, or ``{"steps": [...]}``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"Cannot read {path}: {exc}", title="Unreadable plan file") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else load_yaml(text)
    except ValueError as exc:  # YamlDocumentError is one
        raise UsageError(
            f"{path} is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}",
            title="Invalid plan file",
            suggestion='Write a list of steps, or {"steps": [{"title": "...", "files": [...]}]}.',
        ) from exc
    if isinstance(data, dict) and "steps" in data:
        data = data["steps"]
    if not isinstance(data, list):
        raise UsageError(
            f"{path} holds no list of steps.",
            title="Invalid plan file",
            suggestion='Write a list of steps, or {"steps": [{"title": "...", "files": [...]}]}.',
        )
    return data


@app.command("set")
@handles_errors
def set_(
    ctx: typer.Context,
    steps: Annotated[
        list[str] | None,
        typer.Argument(help="Step titles, in order (or use --file).", show_default=False),
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            "-f",
            help="A JSON or YAML file: a list of steps (titles or objects with title, detail, "
            "files, depends_on, status), or {steps: [...]}.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Replace the session's plan (every step starts pending unless the file says otherwise)."""
    if bool(steps) == bool(file):
        raise UsageError(
            "Give the steps either as arguments or with --file, not both or neither.",
            suggestion='acode plan set "Create AuthService" "Add login endpoint"',
        )
    body: list[Any] = steps_from_file(file) if file else list(steps or [])
    with session_client(ctx, session) as (client, sid):
        plan: list[dict[str, Any]] = client.put(f"/api/sessions/{sid}/plan/", {"steps": body})
    if as_json:
        emit_json(plan)
        return
    out().print(f"[bold green][SUCCESS][/] Plan set: {plural(len(plan), 'step')}.")
    print_steps(plan)


@app.command("step")
@handles_errors
def step(
    ctx: typer.Context,
    number: Annotated[int, typer.Argument(help="The step's number (1 is the first).", min=1)],
    status: Annotated[StepStatus, typer.Option("--status", help="The step's new status.")],
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Set one step's status (pending, in_progress, done, blocked, skipped)."""
    with session_client(ctx, session) as (client, sid):
        plan: list[dict[str, Any]] = client.patch(
            f"/api/sessions/{sid}/plan/steps/{number}/", {"status": status.value}
        )
    if as_json:
        emit_json(plan)
        return
    changed = next((s for s in plan if s["number"] == number), None)
    if changed is not None:
        out().print(
            f"Step {number}: {esc(changed['title'])} is now {esc(said(changed['status']))}."
        )
    print_steps(plan)
