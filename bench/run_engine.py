"""The run engine's cost: queries and wall time of a medium run against the same jobs done by
hand, in the same process (issue 26; a report, no target).

Two arms, interleaved run by run (which goes first alternates), each run in a fresh session,
against the same scripted models (``bench/_runkit.py``):

- baseline "by hand": what a person does for the request without a run: move the session
  Default -> Planner, queue and run the Planner's job (its answer is a plan of ``--steps``
  steps); then for each step Coder (step marked in progress), Tester, Reviewer (step marked
  done; the approval commits the step), each with ``session_transition``, ``job_create``
  and ``run_job``; back to Default.
- measured "run": ``run_start`` of a medium run, then for every job the engine queues what
  the Celery task does: ``run_job`` then ``run_after_job``, until nothing is queued (the
  run ended, committing the change).

Both arms run the same 1 + 3 x steps jobs (the Tester only reads the file, so the jobs are
light and the engine's share shows). The broker publish is stubbed out in both arms.
Figures are per run: median, mean and least wall time, median CPU time of this process
(the database's work is not in it), median queries (every statement on the default
connection, counted in each timed run).

    python bench/run_engine.py [--runs 10] [--steps 2]

On SQLite unless ``DATABASE_URL`` is set (``make bench`` runs it under ``acode.embedded``,
which supplies a Redis); for PostgreSQL:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/acode_bench \\
    REDIS_URL=redis://127.0.0.1:6379/14 python bench/run_engine.py
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
from functools import partial
from typing import Any

from _report import record
from _runkit import (
    Sample,
    bench_user,
    by_hand,
    check_hand,
    check_run,
    fresh_session,
    header,
    jobs_run_here,
    orchestrated,
    quiet_logs,
    scripted_roles,
    timed,
)
from _setup import django_setup, fmt_time

WARMUP = 2
ARMS = ("hand", "run")
LABELS = {
    "hand": "baseline: the same jobs by hand (transition + job_create + run_job)",
    "run": "measured: 1 medium run (run_start + run_job/run_after_job a job)",
}


def signed_ms(seconds: float) -> str:
    return f"{seconds * 1e3:+.1f} ms"


def one(arm: str, user: Any, steps: int) -> tuple[Sample, list[str]]:
    """One run of ``arm`` in a fresh session: what it took, and what went wrong."""
    session = fresh_session(user, f"bench run_engine {arm}")
    if arm == "hand":
        sample, jobs = timed(partial(by_hand, session, user, steps))
        return sample, check_hand(session, jobs, steps)
    sample, run = timed(partial(orchestrated, session, user))
    return sample, check_run(run, steps)


def measure(n: int, steps: int) -> tuple[dict[str, list[Sample]], list[str]]:
    """``WARMUP`` untimed then ``n`` timed runs of each arm, interleaved."""
    user = bench_user()
    samples: dict[str, list[Sample]] = {arm: [] for arm in ARMS}
    errors: list[str] = []
    with scripted_roles(steps), jobs_run_here():
        for i in range(WARMUP + n):
            # Alternate which arm goes first, so neither always runs on a warmer cache.
            for arm in ARMS if i % 2 else ARMS[::-1]:
                sample, problems = one(arm, user, steps)
                errors += problems
                if i >= WARMUP:
                    samples[arm].append(sample)
    return samples, errors


def report(samples: dict[str, list[Sample]], n: int, steps: int) -> None:
    jobs = 1 + 3 * steps
    walls = {arm: [s.wall for s in samples[arm]] for arm in ARMS}
    p50 = {arm: statistics.median(walls[arm]) for arm in ARMS}
    cpu = {arm: statistics.median(s.cpu for s in samples[arm]) for arm in ARMS}
    counts = {arm: statistics.median(s.queries for s in samples[arm]) for arm in ARMS}
    columns = ("p50 wall", "mean wall", "min wall", "p50 cpu")
    print(f"{'':<70}" + "".join(f"{c:>11}" for c in columns) + f"{'queries':>9}")
    for arm in ARMS:
        print(
            f"{LABELS[arm]:<70}{fmt_time(p50[arm]):>11}"
            f"{fmt_time(statistics.fmean(walls[arm])):>11}{fmt_time(min(walls[arm])):>11}"
            f"{fmt_time(cpu[arm]):>11}{counts[arm]:>9.0f}"
        )
    ratio = p50["run"] / p50["hand"]
    mean_ratio = statistics.fmean(walls["run"]) / statistics.fmean(walls["hand"])
    extra = p50["run"] - p50["hand"]
    extra_queries = counts["run"] - counts["hand"]
    print(
        f"run / by hand: {ratio:.3f}x wall (p50; {mean_ratio:.3f}x of the means), "
        f"{cpu['run'] / cpu['hand']:.3f}x cpu (p50), {counts['run'] / counts['hand']:.3f}x queries"
    )
    print(
        f"the engine's share: {signed_ms(extra)} a run, {signed_ms(extra / jobs)} a job "
        f"(wall, p50), {signed_ms(cpu['run'] - cpu['hand'])} a run (cpu, p50); "
        f"{extra_queries:+.0f} queries a run ({extra_queries / jobs:+.1f} a job); "
        f"{n} runs of each arm, {jobs} jobs a run"
    )
    note = f"{steps}-step plan, {jobs} jobs; baseline: the same jobs by hand; {n} of each"
    record("medium run, p50 wall", p50["run"] * 1e3, "ms", baseline=p50["hand"] * 1e3, note=note)
    record("medium run, p50 cpu", cpu["run"] * 1e3, "ms", baseline=cpu["hand"] * 1e3)
    record("medium run, queries (median)", counts["run"], "queries", baseline=counts["hand"])
    record("run / by hand, p50 wall", ratio, "x", note=f"{signed_ms(extra / jobs)} a job")
    record("run / by hand, queries", counts["run"] / counts["hand"], "x")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs of each arm")
    parser.add_argument("--steps", type=int, default=2, help="steps of the plan (1 to 3)")
    args = parser.parse_args()
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)  # in order with log lines, live under make
    django_setup()
    quiet_logs()
    print(header())
    print(
        f"== run_engine: {args.runs} medium runs ({args.steps}-step plan; Planner, then Coder, "
        "Tester, Reviewer a step; scripted) against the same jobs by hand, interleaved"
    )
    samples, errors = measure(args.runs, args.steps)
    report(samples, args.runs, args.steps)
    if errors:
        print(f"ERROR {len(errors)} failures, first: {errors[:5]}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
