"""``acode backlog …``: projects, their tasks by status, YAML imports, a spec given to the
Product Manager (``plan``), and a person's actions on the board (accept or reject a
proposal, reprioritise, unblock)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from acode.cli.errors import UsageError
from acode.cli.output import emit, esc, out, table
from acode.cli.runtime import JsonOption, fetch, handles_errors, send

app = typer.Typer(
    help="Backlogs that feed runs: projects, epics and tasks, and the scheduler's board.",
    no_args_is_help=True,
)

ProjectArgument = Annotated[str, typer.Argument(help="Project slug.")]
TaskArgument = Annotated[str, typer.Argument(help="Task key.")]
COLUMNS = ("proposed", "backlog", "in_progress", "review", "done", "blocked", "rejected")


def _base(project: str) -> str:
    return f"/api/backlog/projects/{project}/"


def _read(file: Path) -> str:
    """The text of a file the command sends; one that cannot be read is a usage error."""
    try:
        return file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"Cannot read {file}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"Cannot read {file}: {exc}") from exc


def _print_projects(projects: list[dict[str, Any]]) -> None:
    if not projects:
        out().print("No projects. Create one with `acode backlog new SLUG TITLE`.")
        return
    rows = table("Project", "Title", "Owner", "Runs at once", "Integration branch", box=None)
    for p in projects:
        rows.add_row(esc(p["slug"]), esc(p["title"]), esc(p["owner"]),
                     str(p["max_concurrent_runs"]), esc(p["integration_branch"]))  # fmt: skip
    out().print(rows)


def _print_tasks(tasks: list[dict[str, Any]]) -> None:
    if not tasks:
        out().print("No tasks. Import some with `acode backlog import PROJECT FILE.yaml`.")
        return
    for column in COLUMNS:
        here = [t for t in tasks if t["status"] == column]
        if not here:
            continue
        out().print(f"[bold]{column.replace('_', ' ')}[/bold] ({len(here)})")
        for t in here:
            deps = f" after {', '.join(t['depends_on'])}" if t["depends_on"] else ""
            run = f" run {t['run'][:8]} ({t['run_status']})" if t["run"] else ""
            out().print(f"  {esc(t['key'])} ({t['priority']}) {esc(t['title'])}{deps}{run}")
            if t["reason"]:
                out().print(f"    {esc(t['reason'])}")


def _print_task(task: dict[str, Any]) -> None:
    out().print(f"[bold]{esc(task['key'])}[/bold]: {esc(task['title'])} ({task['status']}, "
                f"{task['priority']} priority)")  # fmt: skip
    if task["description"]:
        out().print(esc(task["description"]))
    for criterion in task["acceptance_criteria"]:
        out().print(f"  - {esc(criterion)}")
    if task["depends_on"]:
        out().print(f"Depends on: {', '.join(task['depends_on'])}")
    if task["run"]:
        out().print(f"Run: {task['run']} ({task['run_status']}), session {task['session']}")
    if task["reason"]:
        out().print(f"Reason: {esc(task['reason'])}")
    if task["merged_commit"]:
        out().print(f"Merged: {task['merged_commit'][:12]}")


@app.command("projects")
@handles_errors
def projects(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """The projects whose board you may see."""
    emit(fetch(ctx, "/api/backlog/projects/"), as_json=as_json, render=_print_projects)


@app.command("new")
@handles_errors
def new(
    ctx: typer.Context,
    slug: ProjectArgument,
    title: Annotated[str, typer.Argument(help="The project's title.")],
    repository: Annotated[
        str | None, typer.Option("--repository", "-r", help="Registered repository to clone.")
    ] = None,
    runs: Annotated[int, typer.Option("--runs", min=0, help="Runs going at once.")] = 2,
    risk: Annotated[str, typer.Option("--risk", help="Each run's declared risk.")] = "medium",
    as_json: JsonOption = False,
) -> None:
    """Create a project (you own it: its tasks' runs start as you)."""
    body = {"slug": slug, "title": title, "repository": repository or "",
            "max_concurrent_runs": runs, "run_risk": risk}  # fmt: skip
    project = send(ctx, "/api/backlog/projects/", body)
    emit([project], as_json=as_json, render=_print_projects)


@app.command("list")
@handles_errors
def list_tasks(ctx: typer.Context, project: ProjectArgument, as_json: JsonOption = False) -> None:
    """The project's tasks, by status."""
    emit(fetch(ctx, _base(project) + "tasks/"), as_json=as_json, render=_print_tasks)


@app.command("show")
@handles_errors
def show(
    ctx: typer.Context, project: ProjectArgument, task: TaskArgument, as_json: JsonOption = False
) -> None:
    """One task: its criteria, dependencies, run and reason."""
    emit(fetch(ctx, _base(project) + f"tasks/{task}/"), as_json=as_json, render=_print_task)


@app.command("import")
@handles_errors
def import_(
    ctx: typer.Context,
    project: ProjectArgument,
    file: Annotated[Path, typer.Argument(help="YAML: epics with tasks, and/or tasks.")],
    as_json: JsonOption = False,
) -> None:
    """Add a YAML document's epics and tasks to the backlog (all or nothing)."""
    text = _read(file)
    answer = send(ctx, _base(project) + "import/", content=text, content_type="application/yaml")
    emit(answer["created"], as_json=as_json, render=_print_tasks)


def _act(ctx: typer.Context, project: str, task: str, action: str, body: Any) -> Any:
    return send(ctx, _base(project) + f"tasks/{task}/{action}/", body)


@app.command("accept")
@handles_errors
def accept(
    ctx: typer.Context, project: ProjectArgument, task: TaskArgument, as_json: JsonOption = False
) -> None:
    """Accept a task the Product Manager proposed: it joins the backlog."""
    emit(_act(ctx, project, task, "accept", {}), as_json=as_json, render=_print_task)


@app.command("reject")
@handles_errors
def reject(
    ctx: typer.Context,
    project: ProjectArgument,
    task: TaskArgument,
    reason: Annotated[str, typer.Option("--reason", help="Why not (kept on the task).")],
    as_json: JsonOption = False,
) -> None:
    """Reject a task the Product Manager proposed, saying why: it is closed, never done."""
    answer = _act(ctx, project, task, "reject", {"reason": reason})
    emit(answer, as_json=as_json, render=_print_task)


@app.command("unblock")
@handles_errors
def unblock(
    ctx: typer.Context,
    project: ProjectArgument,
    task: TaskArgument,
    note: Annotated[str, typer.Option("--note", help="What changed (its next run is told).")] = "",
    as_json: JsonOption = False,
) -> None:
    """Send a blocked (or merge-conflicted) task back to the backlog for a new run."""
    emit(_act(ctx, project, task, "unblock", {"note": note}), as_json=as_json, render=_print_task)


@app.command("priority")
@handles_errors
def priority(
    ctx: typer.Context,
    project: ProjectArgument,
    task: TaskArgument,
    level: Annotated[str, typer.Argument(help="high, medium or low.")],
    as_json: JsonOption = False,
) -> None:
    """Reprioritise a task (the scheduler starts the highest first)."""
    answer = _act(ctx, project, task, "priority", {"priority": level})
    emit(answer, as_json=as_json, render=_print_task)


def _print_plan(plan: dict[str, Any]) -> None:
    out().print(
        f"The Product Manager plans the project: job {plan['job']} ({plan['status']}) in "
        f"session {plan['session']}. Its proposals appear as proposed tasks "
        "(`acode backlog list PROJECT`); accept each with `acode backlog accept PROJECT KEY`."
    )


@app.command("plan")
@handles_errors
def plan(
    ctx: typer.Context,
    project: ProjectArgument,
    file: Annotated[Path, typer.Argument(help="The product spec (text or Markdown).")],
    as_json: JsonOption = False,
) -> None:
    """Give the project's spec to the Product Manager: it proposes epics and tasks."""
    answer = send(ctx, _base(project) + "plan/", {"spec": _read(file)})
    emit(answer, as_json=as_json, render=_print_plan)
