"""How ``acode run`` shows a run: what it started with, everything about it, and what an
approval covers."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from acode.cli.commands.changes import print_commit
from acode.cli.commands.run_follow import evidence_line, print_verdict
from acode.cli.commands.run_outcome import print_outcome, usage_line
from acode.cli.output import esc, fmt_time, out, said, short_id


def print_start(run: dict[str, Any]) -> None:
    """The run just started: its risk (and what raised it), template and gate."""
    console = out()
    tier = str(run.get("effective_tier"))
    declared = str(run.get("declared_tier"))
    raised = f" (declared {declared}, raised by risk signals)" if tier != declared else ""
    console.print(
        f"Run {esc(short_id(run['id']))} started: {esc(tier)} risk{esc(raised)}, template "
        f"{esc(run.get('template'))}" + (", approval required" if run.get("gate_required") else "")
    )
    for signal in run.get("signals") or []:
        if isinstance(signal, dict):
            console.print(
                f"[dim]  signal {esc(signal.get('signal'))}: {esc(signal.get('where'))} → "
                f"{esc(signal.get('tier'))}[/]"
            )


def print_run(data: dict[str, Any]) -> None:
    """Everything a person needs to know about a run, then what they may do next."""
    console = out()
    _print_summary(console, data)
    console.print()
    console.print("Stages:")
    for stage in data.get("stages") or []:
        _print_stage(console, stage)
    _print_people(console, data)
    if data["status"] in ("awaiting_approval", "awaiting_input", "blocked", "running"):
        print_outcome(console, data)
        return
    if data.get("commit"):
        console.print()
        print_commit(console, data["commit"])
    elif data["status"] == "succeeded":
        console.print()
        console.print("Nothing was committed: the run ended with no changes to deliver.")
    console.print(f"[dim]{esc(usage_line(data))}[/]")


def _print_summary(console: Console, data: dict[str, Any]) -> None:
    """The run's request, status, risk, signals and who started it when."""
    console.print(f"Run: [bold]{esc(data['id'])}[/]")
    console.print(f"Session: {esc(data['session'])}")
    console.print(f"Request: {esc(data['request'])}")
    status = esc(said(data["status"])) + (
        f" ({esc(data['error_code'])})" if data["error_code"] else ""
    )
    console.print(f"Status: {status}" + (f" — {esc(data['message'])}" if data["message"] else ""))
    console.print(
        f"Risk: {esc(data['effective_tier'])} (declared {esc(data['declared_tier'])}); template "
        f"{esc(data['template'])}; approval {'required' if data['gate_required'] else 'not required'}"
    )
    for signal in data.get("signals") or []:
        console.print(
            f"  signal {esc(signal.get('signal'))}: {esc(signal.get('where'))} → "
            f"{esc(signal.get('tier'))}"
        )
    console.print(f"Started by {esc(data['created_by'])} at {fmt_time(data['created_at'])}")
    if data.get("finished_at"):
        console.print(f"Finished: {fmt_time(data['finished_at'])}")


def _print_stage(console: Console, stage: dict[str, Any]) -> None:
    """One stage: where it ran, its status, and its verdict, test evidence or changes."""
    # Plan and explore stages carry step 1 too; only the step loop is about a step.
    looped = stage["purpose"] in ("code", "test", "review") and stage.get("plan_step")
    step = f" step {stage['plan_step']}" if looped else ""
    revision = f" revision {stage['revision']}" if stage.get("revision") else ""
    where = f"in {esc(stage['role_name'])}" if stage.get("role_name") else "gate"
    console.print(
        f"  {stage['seq']}. {esc(stage['purpose'])} {where}"
        f"{esc(step)}{esc(revision)}: {esc(said(stage['status']))}"
        + (f" (job {esc(short_id(stage['job']))})" if stage.get("job") else "")
    )
    evidence = stage.get("evidence") or {}
    if stage["purpose"] == "review" and stage.get("verdict"):
        print_verdict(console, stage["verdict"], indent="     ")
    elif stage["purpose"] == "test" and evidence:
        console.print(f"     Tests: {esc(evidence_line(evidence))}")
    elif stage["purpose"] == "code" and evidence.get("changed"):
        console.print(f"     Pending changes: {esc(', '.join(evidence['changed']))}")


def _print_people(console: Console, data: dict[str, Any]) -> None:
    """The questions the run asked people (and their answers) and its approvals."""
    for question in data.get("questions") or []:
        console.print()
        console.print(f"Question from {esc(question['asked_by'])}: {esc(question['question'])}")
        if question.get("answered_at"):
            console.print(f"  Answer by {esc(question['answered_by'])}: {esc(question['answer'])}")
    for approval in data.get("approvals") or []:
        decided = (
            f" by {esc(approval['decided_by'])} at {fmt_time(approval['decided_at'])}"
            if approval.get("decided_at")
            else ""
        )
        reason = f": {esc(approval['reason'])}" if approval.get("reason") else ""
        console.print(
            f"Approval {esc(str(approval['digest'])[:12])}: {esc(said(approval['status']))}"
            f"{decided}{reason}"
        )


def print_approving(run: dict[str, Any], digest: str) -> None:
    """What an approval of ``digest`` covers, shown before it is sent."""
    console = out()
    changes = run.get("pending_changes") or []
    console.print(f"Approving run {short_id(run['id'])}: {esc(run['request'])}")
    console.print(f"Digest: {esc(digest)}")
    console.print(f"Pending changes ({len(changes)}):")
    for change in changes:
        console.print(f"  - {esc(change.get('path'))} ({esc(change.get('kind'))})")
