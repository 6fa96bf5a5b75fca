"""Following an orchestrated run live, and the lines ``acode run`` prints for it.

What a person sees is built from three reads per poll: the session's role history (the
``[ROLE TRANSITION]`` lines, in the spec's words), the run's detail (each stage's result
once it ends: the plan, the Explorer's findings, the changes, the test evidence, the
review verdict with its findings) and the run's events: each stage's start and each
model or tool call of its jobs in a line (``--verbose``: every job event in full). While a
model call or a tool is waited on, a line every 30 s says what, for how long, and the calls
so far (the run's ``waiting``). New items are printed in the order they happened.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import typer
from rich.console import Console

from acode.cli.client import ApiClient
from acode.cli.commands.agent import _events, render_event
from acode.cli.errors import ApiError, ExitCode
from acode.cli.output import ask_to_cancel, esc, parse_time, plural, said, short_id

FINAL_RUN_STATUSES = ("succeeded", "failed", "rejected", "cancelled")
PAUSED_RUN_STATUSES = ("awaiting_input", "awaiting_approval", "blocked")
ENDED_STAGE_STATUSES = ("succeeded", "failed", "cancelled")
ORCHESTRATOR = "orchestrator"  # the actor of the transitions a run makes
WAIT_REPORT_SECONDS = 30  # a wait in flight is reported once per this many seconds


def _sort_key(value: Any) -> float:
    """A server timestamp as seconds; an item without one goes last."""
    parsed = parse_time(str(value) if value else None)
    return parsed.timestamp() if parsed is not None else float("inf")


def brief(text: Any, limit: int = 300) -> str:
    """One paragraph of server text, cut to ``limit`` characters."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass
class RunFollower:
    """Prints what is new about one run each time :meth:`poll` is called."""

    client: ApiClient
    run: dict[str, Any]
    console: Console
    verbose: bool = False
    names: dict[str, str] = field(default_factory=dict)
    last_seq: int = 0
    printed_stages: set[int] = field(default_factory=set)
    after: int = 0
    _last_history: list[dict[str, Any]] = field(default_factory=list)
    events_on: bool = True  # an older server has no run events endpoint
    _model_calls: dict[Any, int] = field(default_factory=dict)  # per stage
    _wait_said: tuple[str, int] = ("", 0)  # the wait last reported, in 30 s steps

    @property
    def run_id(self) -> str:
        return str(self.run["id"])

    def skip_past(self) -> None:
        """Print only what happens from now on (after an answer, say)."""
        history = self._history()
        self.last_seq = max((int(r.get("seq") or 0) for r in history), default=0)
        self.printed_stages = {
            int(s["seq"]) for s in self.run.get("stages") or [] if _stage_ended(s)
        }
        self._run_events()  # moves the cursor past what happened already

    def poll(self) -> dict[str, Any]:
        """Read the run and print what is new; the run's detail as it is now."""
        # History before the run: a stage's end and the transition after it are written
        # together, so a transition read here always has its stage in the detail below.
        history = self._history()
        self.run = self.client.get(f"/api/runs/{self.run_id}/")
        if self.run["status"] not in ("running",):
            history = self._history()  # the hand-back to Default came with the last status
        items: list[tuple[float, int, str, dict[str, Any]]] = []
        for row in history:
            seq = int(row.get("seq") or 0)
            if seq > self.last_seq and self._in_run(row):
                items.append((_sort_key(row.get("created_at")), 1, "transition", row))
        for stage in self.run.get("stages") or []:
            if _stage_ended(stage) and int(stage["seq"]) not in self.printed_stages:
                items.append((_sort_key(stage.get("finished_at")), 0, "stage", stage))
        for event in self._run_events():
            items.append((_sort_key(event.get("at")), 2, "event", event))
        for _, _, kind, item in sorted(items, key=lambda i: (i[0], i[1])):
            if kind == "transition":
                self.last_seq = max(self.last_seq, int(item.get("seq") or 0))
                self._print_transition(item)
            elif kind == "stage":
                self.printed_stages.add(int(item["seq"]))
                print_stage_result(self.client, self.console, self.run, item)
            elif self.verbose:
                self._print_event(item)
            else:
                self._print_progress(item)
        self._print_waiting()
        return self.run

    # -- reads -------------------------------------------------------------------------
    def _history(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.client.get(
            f"/api/sessions/{self.run['session']}/history/"
        )
        self._last_history = rows
        return rows

    def _in_run(self, row: dict[str, Any]) -> bool:
        """Transitions made while this run was executing (history rows carry no run id):
        from its start to its end, and the hand-back to Default its end writes."""
        at = _sort_key(row.get("created_at"))
        if at < _sort_key(self.run.get("created_at")):
            return False
        finished = self.run.get("finished_at")
        if not finished or at <= _sort_key(finished):
            return True
        handback = self._handback_seq
        return handback is not None and int(row.get("seq") or 0) == handback

    @property
    def _handback_seq(self) -> int | None:
        """The transition the run's end wrote: the first after it ended, by the orchestrator."""
        finished = _sort_key(self.run.get("finished_at"))
        after = [r for r in self._last_history if _sort_key(r.get("created_at")) > finished]
        first = min(after, key=lambda r: int(r.get("seq") or 0), default=None)
        if first is not None and first.get("actor") == ORCHESTRATOR:
            return int(first.get("seq") or 0)
        return None

    def _run_events(self) -> list[dict[str, Any]]:
        if not self.events_on:
            return []
        try:
            page = self.client.get(f"/api/runs/{self.run_id}/events/", params={"after": self.after})
        except ApiError as error:
            if error.endpoint_missing:
                self.events_on = False  # an older server: follow without the job events
                return []
            raise
        events = _events(page)
        nxt = page.get("next") if isinstance(page, dict) else None
        seen = [int(e.get("n") or e.get("seq") or 0) for e in events]
        self.after = int(nxt) if isinstance(nxt, int) else max([self.after, *seen])
        return events

    # -- printing ----------------------------------------------------------------------
    def _print_event(self, event: dict[str, Any]) -> None:
        """A job event of the run as ``acode agent`` shows it; a person's decision; stage
        starts and ends are left out (the transitions and results already say them)."""
        kind = str(event.get("kind") or "")
        raw = event.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if kind.startswith("job."):
            stage: dict[str, Any] = next(
                (s for s in self.run.get("stages") or [] if s.get("seq") == data.get("stage")), {}
            )
            render_event(
                self.console, {**event, "kind": kind[4:]}, role=str(stage.get("role_name") or "?")
            )
        elif kind == "decision":
            self.console.print(
                f"[dim]Decision by {esc(data.get('actor'))}: {esc(data.get('result'))}[/]"
            )

    def _stage_role(self, data: dict[str, Any]) -> str:
        stage: dict[str, Any] = next(
            (s for s in self.run.get("stages") or [] if s.get("seq") == data.get("stage")), {}
        )
        return str(stage.get("role_name") or "?")

    def _print_progress(self, event: dict[str, Any]) -> None:
        """One line per stage start, model call and tool call (without ``--verbose``)."""
        kind = str(event.get("kind") or "")
        raw = event.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if kind == "run" and str(data.get("result") or "").startswith("stage "):
            self.console.print(f"[dim]▶ Run {esc(data.get('result'))} started[/]")
        elif kind == "job.llm_response":
            stage = data.get("stage")
            self._model_calls[stage] = self._model_calls.get(stage, 0) + 1
            calls = data.get("tool_calls") or []
            asked = plural(len(calls), "tool call") if calls else "final answer"
            self.console.print(
                f"[dim]  {esc(self._stage_role(data))} · model call "
                f"{self._model_calls[stage]}: {esc(data.get('tokens_in', 0))} tokens in, "
                f"{esc(data.get('tokens_out', 0))} out, {esc(asked)}[/]"
            )
        elif kind == "job.tool_call":
            self.console.print(
                f"[dim]  {esc(self._stage_role(data))} · ⚙ {esc(data.get('name'))} "
                f"{esc(brief(data.get('arguments'), 100))}[/]"
            )
        elif kind == "job.tool_denied":
            render_event(self.console, {**event, "kind": kind[4:]}, role=self._stage_role(data))

    def _print_waiting(self) -> None:
        """Every 30 s of one wait (a model call, a tool, a worker): what, how long, calls."""
        waiting = self.run.get("waiting")
        if not isinstance(waiting, dict):
            return
        seconds = int(waiting.get("seconds") or 0)
        key = (str(waiting.get("what")) + str(waiting.get("since")), seconds // WAIT_REPORT_SECONDS)
        if seconds < WAIT_REPORT_SECONDS or key == self._wait_said:
            return
        self._wait_said = key
        self.console.print(
            f"[yellow]  … waiting for {esc(waiting.get('text'))} for {seconds} s "
            f"({plural(int(waiting.get('llm_calls') or 0), 'LLM call')}, "
            f"{plural(int(waiting.get('tool_calls') or 0), 'tool call')} so far)[/]"
        )

    def _name(self, slug: Any) -> str:
        return self.names.get(str(slug), str(slug).title())

    def _print_transition(self, row: dict[str, Any]) -> None:
        target = self._name(row["to_role"])
        step = f"{self._name(row['from_role'])} → {target}" if row.get("from_role") else target
        self.console.print()
        self.console.print(
            f"[bold magenta][ROLE TRANSITION][/] {esc(step)} (Reason: {esc(row.get('reason'))})"
        )


def _stage_ended(stage: dict[str, Any]) -> bool:
    return str(stage.get("status")) in ENDED_STAGE_STATUSES


def print_plan(console: Console, steps: list[dict[str, Any]]) -> None:
    """The plan as the spec shows it: ``Step 1: …`` lines and a count."""
    for step in steps:
        console.print(f"Step {step['number']}: {esc(step['title'])}")
    console.print(f"Plan complete. {plural(len(steps), 'step')} identified.")


def print_verdict(console: Console, verdict: dict[str, Any], *, indent: str = "") -> None:
    """A review verdict: approved or changes requested, its summary and findings."""
    what = str(verdict.get("verdict") or "")
    summary = str(verdict.get("summary") or "")
    if what == "approve":
        console.print(f"{indent}[green]✅ Approved.[/] {esc(summary)}".rstrip())
    elif what == "request_changes":
        console.print(f"{indent}[yellow]✗ Changes requested.[/] {esc(summary)}".rstrip())
    else:
        console.print(f"{indent}No verdict. {esc(summary)}".rstrip())
    for finding in verdict.get("findings") or []:
        where = str(finding.get("path") or "")
        if finding.get("line"):
            where += f":{finding['line']}"
        console.print(f"{indent}  - {esc(where + ': ' if where else '')}{esc(finding.get('body'))}")


def evidence_line(evidence: dict[str, Any]) -> str:
    """The Tester's evidence in one line."""
    if not evidence.get("ran"):
        return "the Tester ran no tests. " + brief(evidence.get("summary"), 200)
    outcome = f"`{evidence.get('command') or 'tests'}` {evidence.get('status') or '?'}"
    summary = brief(evidence.get("summary"), 200)
    return f"{outcome}" + (f" ({summary})" if summary else "")


def print_stage_result(
    client: ApiClient, console: Console, run: dict[str, Any], stage: dict[str, Any]
) -> None:
    """What one ended stage produced, in a line or a few."""
    purpose = str(stage.get("purpose"))
    evidence = stage.get("evidence") or {}
    console.print()
    if stage.get("status") != "succeeded":
        console.print(
            f"[red]The {esc(purpose)} stage in {esc(stage.get('role_name') or '-')} "
            f"{esc(stage.get('status'))}.[/]"
        )
        return
    if purpose == "plan":
        steps: list[dict[str, Any]] = client.get(f"/api/sessions/{run['session']}/plan/")
        print_plan(console, steps)
    elif purpose == "explore":
        console.print(f"Findings: {esc(brief(evidence.get('findings')))}")
    elif purpose == "code":
        if evidence.get("summary"):
            console.print(f"Coder: {esc(brief(evidence['summary'], 200))}")
        changed = evidence.get("changed") or []
        console.print(f"Pending changes: {esc(', '.join(changed)) if changed else 'none'}")
    elif purpose == "test":
        console.print(f"Tests: {esc(evidence_line(evidence))}")
    elif purpose == "review":
        print_verdict(console, stage.get("verdict") or {})


def follow_run(
    client: ApiClient, follower: RunFollower, interval: float, *, status_console: Console
) -> dict[str, Any]:
    """Poll until the run ends or pauses for a person; Ctrl-C offers to cancel it."""
    run = follower.run
    try:
        with status_console.status(_spinner_text(run)) as spinner:
            while True:
                run = follower.poll()
                if run["status"] != "running":
                    return run
                spinner.update(_spinner_text(run))
                time.sleep(interval)
    except KeyboardInterrupt:
        _offer_cancel(client, str(run["id"]), follower.console)
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None


def _spinner_text(run: dict[str, Any]) -> str:
    stage = run.get("current_stage") or {}
    where = f" · {stage.get('purpose')} in {stage.get('role_name')}" if stage else ""
    return f"Run {short_id(run['id'])} {said(run['status'])}{where}…"


def _offer_cancel(client: ApiClient, run_id: str, console: Console) -> None:
    if ask_to_cancel(f"run {short_id(run_id)}"):
        try:
            client.post(f"/api/runs/{run_id}/cancel/", {})
        except ApiError as error:
            if error.code != "ACODE-RUN-004":  # ended meanwhile: nothing left to cancel
                raise
            console.print(f"Run {esc(run_id)} had already ended.")
            return
        console.print(
            f"Cancel requested for run {esc(run_id)}; it stops when its current stage ends."
        )
    else:
        console.print(f"Run {esc(run_id)} keeps going; follow it with `acode run follow {run_id}`.")
