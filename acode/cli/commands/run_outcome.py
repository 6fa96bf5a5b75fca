"""How an orchestrated run ended, as ``acode run``, ``follow`` and ``show`` print it: the
usage line, what a person does next after a pause, and the error a failed run exits with."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from acode.cli.commands.changes import print_commit
from acode.cli.errors import CliError, ExitCode
from acode.cli.output import code_entry, esc, fmt_time, plural, said, short_id


def usage_line(run: dict[str, Any]) -> str:
    """``3 stages · 7 LLM calls · 12,345 tokens · 14 s`` from the run's budget."""
    budget = run.get("budget") or {}
    stages = [s for s in run.get("stages") or [] if s.get("job")]
    return (
        f"{said(run['status'])} · {run.get('effective_tier', '?')} risk · {plural(len(stages), 'stage')}"
        f" · {int(budget.get('used_llm_calls') or 0)} LLM calls · "
        f"{int(budget.get('used_tokens') or 0):,} tokens · "
        f"{int(budget.get('elapsed_seconds') or 0)} s"
    )


def print_outcome(console: Console, run: dict[str, Any]) -> None:
    """The final lines: what happened and, for a pause, what a person does next."""
    rid = short_id(run["id"])
    status = run["status"]
    message = str(run.get("message") or "")
    console.print()
    if status == "succeeded":
        console.print(f"[bold green][SUCCESS][/] Run {rid} succeeded: {esc(message)}")
        if run.get("commit"):
            print_commit(console, run["commit"])
    elif status == "awaiting_approval":
        pending = run.get("pending_approval") or {}
        changes = run.get("pending_changes") or []
        console.print(
            f"[bold yellow][APPROVAL NEEDED][/] Run {rid} waits for a person to approve "
            f"{plural(len(changes), 'pending change')} (digest "
            f"{esc(str(pending.get('digest') or '?')[:12])}, expires "
            f"{fmt_time(pending.get('expires_at'))}):"
        )
        for change in changes:
            console.print(f"  - {esc(change.get('path'))} ({esc(change.get('kind'))})")
        if run.get("can_approve"):
            console.print(f"Approve with `acode run approve {rid}` (or `acode run reject {rid}`).")
        else:
            console.print(
                f"Another person with the 'approve run' permission approves it with "
                f"`acode run approve {rid}` (or rejects it with `acode run reject {rid} "
                '--reason "..."`).'
            )
    elif status in ("awaiting_input", "blocked"):
        question = (run.get("open_question") or {}).get("question") or message
        label = "BLOCKED" if status == "blocked" else "QUESTION"
        console.print(f"[bold yellow][{label}][/] Run {rid} waits for an answer: {esc(question)}")
        console.print(
            f'Answer with `acode run answer {rid} "your answer"`, or cancel it with '
            f"`acode run cancel {rid}`."
        )
    elif status == "running":
        console.print(f"Run {rid} is running; follow it with `acode run follow {rid}`.")
    console.print(f"[dim]{esc(usage_line(run))}[/]")


def run_failure(run: dict[str, Any]) -> CliError | None:
    """The error a run that did not succeed ends the command with (None: success or pause)."""
    status = run["status"]
    if status not in ("failed", "rejected", "cancelled"):
        return None
    code = str(run.get("error_code") or "")
    title, hint = code_entry(code) if code else ("", "")
    return CliError(
        str(run.get("message") or f"The run ended {said(status)}."),
        title=f"Run {said(status)}" + (f": {code} {title}" if code else ""),
        suggestion=hint,
        exit_code=ExitCode.JOB_FAILED,
    )
