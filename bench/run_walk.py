"""A run advancing after a job, walked: the project files it visits, how often control comes
back to a file it had left, how often the session row is locked, how many queries (issue 26).

A medium run of a ``--steps``-step plan (``bench/_runkit.py``: scripted models, jobs run in
this process) is driven as the Celery task drives it: run the queued job, then advance. Each
``run_advance(run_id)`` is traced with ``sys.setprofile``, keeping only frames whose code is
in the project's packages (acode/, roles/, sessions_app/); Django, the standard library and
this script are transparent, so a project function called through Django counts as called
by the innermost project frame below it. One untraced run first warms every import and
cache, so no module's first import shows up as a visit.

- files: distinct project files with code running during the advance;
- returns: each time a project function returns into a caller in another project file
  (control comes back A -> B -> A to a file it had left); distinct: the different
  (callee file, caller file) pairs among them;
- session locks: statements with ``FOR UPDATE`` on the sessions table (SQLite has no
  ``FOR UPDATE``: run it on PostgreSQL); all locks: ``FOR UPDATE`` on any table;
- queries: every statement on the default connection during the advance.

The headline is advance 1, after the Planner's job (it closes the plan stage and starts
step 1's Coder); the table lists every advance of the run. ``--verbose`` prints the walk of
one advance (``--show N``) file by file.

    python bench/run_walk.py [--steps 2] [--verbose] [--show 1]

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/acode_bench \\
    REDIS_URL=redis://127.0.0.1:6379/14 python bench/run_walk.py --verbose
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from _report import record
from _runkit import (
    bench_user,
    check_run,
    fresh_session,
    header,
    jobs_run_here,
    orchestrated,
    quiet_logs,
    run_next_job,
    scripted_roles,
    start_run,
)
from _setup import ROOT, django_setup

PACKAGES = ("acode", "audit", "roles", "sessions_app")
# The modules that decide and write (services, permissions, selectors): the walk the issue
# counted by hand, without models, the role registry or helpers in acode/.
DECISIONS = ("sessions_app/services/", "sessions_app/permissions.py", "sessions_app/selectors.py")
FROM_TABLE = re.compile(r'\bFROM\s+"?(\w+)"?', re.IGNORECASE)


@dataclass
class Walk:
    """A profile hook that follows control between project files."""

    events: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, from, to)
    entered: Counter[str] = field(default_factory=Counter)
    returns: Counter[tuple[str, str]] = field(default_factory=Counter)  # (callee, caller)
    stack: list[tuple[FrameType, str]] = field(default_factory=list)  # project frames only
    scope: tuple[str, ...] = PACKAGES  # path prefixes followed (--scope)
    _files: dict[str, str | None] = field(default_factory=dict)

    def project_file(self, filename: str) -> str | None:
        """The path relative to the checkout, for project code; None for anything else."""
        if filename not in self._files:
            try:
                relative = Path(filename).resolve().relative_to(ROOT)
            except ValueError:
                relative = None
            inside = relative is not None and str(relative).startswith(self.scope)
            self._files[filename] = str(relative) if inside else None
        return self._files[filename]

    def where(self) -> str:
        """The innermost project function and its project caller, as ``file:function``."""
        named = [f"{path}:{frame.f_code.co_name}" for frame, path in self.stack[-2:]]
        return " <- ".join(reversed(named)) or "?"

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            path = self.project_file(frame.f_code.co_filename)
            if path is None:
                return
            caller = self.stack[-1][1] if self.stack else ""
            self.stack.append((frame, path))
            if path != caller:
                self.entered[path] += 1
                self.events.append(("call", caller, f"{path}:{frame.f_code.co_name}"))
        elif event == "return" and self.stack and self.stack[-1][0] is frame:
            _, path = self.stack.pop()
            caller = self.stack[-1][1] if self.stack else ""
            if caller and caller != path:
                self.returns[(path, caller)] += 1
                self.events.append(("return", path, caller))


@dataclass
class Advance:
    """What one advance did."""

    after: str  # the stage whose job had just ended
    walk: Walk
    queries: list[tuple[str, str]]  # (SQL, the project function that sent it)
    decisions: Walk = field(default_factory=Walk)  # the same walk, in DECISIONS only

    def lock_sites(self, table: str | None = None) -> list[tuple[str, str]]:
        """(table, function) of each ``FOR UPDATE``, on ``table`` or any."""
        found = []
        for sql, where in self.queries:
            if "FOR UPDATE" not in sql.upper():
                continue
            locked = FROM_TABLE.search(sql)
            name = locked.group(1) if locked else "?"
            if table is None or name == table:
                found.append((name, where))
        return found

    def locks(self, table: str | None = None) -> int:
        return len(self.lock_sites(table))


def traced_advance(run_id: Any, after: str) -> Advance:
    """``run_advance(run_id)``, walked and its queries counted."""
    from django.db import connection

    from sessions_app.services.runs import run_advance

    walk = Walk()
    decisions = Walk(scope=DECISIONS)
    seen: list[tuple[str, str]] = []

    def both(frame: FrameType, event: str, arg: Any) -> None:
        walk(frame, event, arg)
        decisions(frame, event, arg)

    def sent(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        seen.append((sql, walk.where()))
        return execute(sql, *args)

    with connection.execute_wrapper(sent):
        sys.setprofile(both)
        try:
            run_advance(run_id)
        finally:
            sys.setprofile(None)
    return Advance(after, walk, seen, decisions)


def stage_of(job_id: str) -> str:
    from sessions_app.models import Job

    job = Job.objects.select_related("run_stage").get(pk=job_id)
    stage = job.run_stage
    if stage is None:
        return "?"
    looped = stage.purpose in ("code", "test", "review")
    return f"{stage.purpose} (step {stage.plan_step})" if looped else str(stage.purpose)


def walk_a_run(steps: int) -> tuple[list[Advance], list[str]]:
    """Warm up with one untraced run, then trace every advance of a second; the advances,
    and what went wrong with the runs."""
    user = bench_user()
    advances: list[Advance] = []
    with scripted_roles(steps), jobs_run_here():
        warm_up = orchestrated(fresh_session(user, "bench run_walk warm-up"), user)
        errors = check_run(warm_up, steps)
        run = start_run(fresh_session(user, "bench run_walk"), user)
        while (job_id := run_next_job()) is not None:
            advances.append(traced_advance(run.pk, stage_of(job_id)))
        errors += check_run(run, steps)
        if advances and not advances[0].walk.entered:
            errors.append(f"no project code ran from {ROOT}: put it first on PYTHONPATH")
        print(f"run {run.pk}: {run.status} {run.message}")
    return advances, errors


def table(advances: list[Advance], session_table: str) -> None:
    print(
        f"{'#':>2}  {'advance after the job of':<18}{'files':>6}{'returns':>8}"
        f"{'distinct':>9}{'session locks':>14}{'all locks':>10}{'queries':>8}"
        f"{'svc files':>10}{'svc returns':>12}"
    )
    for i, a in enumerate(advances, start=1):
        print(
            f"{i:>2}  {a.after:<18}{len(a.walk.entered):>6}{a.walk.returns.total():>8}"
            f"{len(a.walk.returns):>9}{a.locks(session_table):>14}{a.locks():>10}"
            f"{len(a.queries):>8}{len(a.decisions.entered):>10}"
            f"{a.decisions.returns.total():>12}"
        )


def show(advance: Advance, number: int) -> None:
    """The walk of one advance, one line per change of file (indented by project depth)."""
    print(f"\n== walk of advance {number} (after the job of {advance.after})")
    depth = 0
    for kind, source, target in advance.walk.events:
        if kind == "call":
            print(f"{'  ' * depth}-> {target}")
            depth += 1
        else:
            depth = max(0, depth - 1)
            print(f"{'  ' * depth}<- back in {target} (from {source})")
    print("\nfiles visited (entries):")
    for path, count in sorted(advance.walk.entered.items()):
        print(f"  {count:>3}  {path}")
    print("\nlocks (FOR UPDATE), in order:")
    for table_name, where in advance.lock_sites():
        print(f"  {table_name:<28} by {where}")
    print("\nreturns (callee -> caller: times):")
    for (callee, caller), count in advance.walk.returns.most_common():
        print(f"  {count:>3}  {callee} -> {caller}")


def headline(first: Advance, session_table: str) -> None:
    walk = first.walk
    print(
        f"\nadvance after the Planner's job: {len(walk.entered)} project files, "
        f"{walk.returns.total()} returns to a file already left "
        f"({len(walk.returns)} distinct callee -> caller pairs), session row locked "
        f"{first.locks(session_table)} times ({first.locks()} FOR UPDATE in all), "
        f"{len(first.queries)} queries"
    )
    decided = first.decisions
    print(
        f"in services, permissions and selectors only: {len(decided.entered)} files, "
        f"{decided.returns.total()} returns to a file already left"
    )
    note = "run_advance after the Planner's job (plan -> step 1 Coder)"
    record("files visited by one advance", len(walk.entered), "files", note=note)
    record("returns to a file already left", walk.returns.total(), "returns", note=note)
    record("distinct returns (callee -> caller)", len(walk.returns), "pairs", note=note)
    record("service files visited by one advance", len(decided.entered), "files", note=note)
    record("returns between service files", decided.returns.total(), "returns", note=note)
    record("session row locks in one advance", first.locks(session_table), "locks", note=note)
    record("queries in one advance", len(first.queries), "queries", note=note)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=2, help="steps of the plan")
    parser.add_argument("--verbose", action="store_true", help="print the walk file by file")
    parser.add_argument("--show", type=int, default=1, help="which advance --verbose prints")
    args = parser.parse_args()
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)
    django_setup()
    quiet_logs()
    from django.db import connection

    from sessions_app.models import AgentSession

    print(header())
    if connection.vendor == "sqlite":
        print("note: SQLite sends no FOR UPDATE, so its lock counts are 0; use PostgreSQL")
    advances, errors = walk_a_run(args.steps)
    if not advances:
        print(f"ERROR the run queued no job: {errors[:5]}", file=sys.stderr)
        return 1
    session_table = AgentSession._meta.db_table
    table(advances, session_table)
    headline(advances[0], session_table)
    if args.verbose:
        show(advances[args.show - 1], args.show)
    if errors:
        print(f"ERROR {len(errors)} failures, first: {errors[:5]}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
