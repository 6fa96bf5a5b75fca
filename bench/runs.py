"""Orchestrated runs: what the run engine costs on top of the jobs it runs (issue 15).

Two arms, interleaved run by run, in this process, against the same scripted models:

- baseline "by hand": what a person does for a medium-risk request without a run: move
  the session Default -> Planner -> Coder -> Tester -> Reviewer with ``session_transition``,
  queue a job in each role with ``job_create`` and run it (``run_job``); the Reviewer's
  approval commits the change; back to Default.
- measured "run": ``run_start`` (medium template), then what the Celery task does for each
  stage's job: ``run_job`` then ``run_after_job``, which closes the stage and starts the
  next (transition, stage, budget, job), until the run ends (committing the change).

Both arms run the same four jobs: the Planner answers a one-step plan, the Coder creates a
file, the Tester reads it, the Reviewer approves. The jobs are light on purpose (the Tester
runs no test process), so the engine's share is not hidden by the jobs' own work.
The broker publish (and the check for a consumer) is stubbed out in both arms: the jobs
run here. Target: a run takes under 1.1x the time of the same jobs by hand.

The four roles' models are switched to scripted endpoints for the run and restored
afterwards; two pools of bench sessions (one per arm) are reused run to run, each run
writing a file of its own.

    python bench/runs.py [--runs 20]
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any
from unittest import mock

from _report import record
from _setup import django_setup, fmt_time, verdict

TARGET_RATIO = 1.1
WARMUP = 2
ROLES = ("planner", "coder", "tester", "reviewer")
REQUEST = "Add a greeting helper"
PLAN = json.dumps({"steps": [{"title": REQUEST, "files": ["greet.py"]}]})
HISTORY = ["Planner", "Coder", "Tester", "Reviewer", "Default"]


def _ms(seconds: float) -> str:
    return fmt_time(seconds).strip()


def header() -> str:
    from django.db import connection

    db = connection.settings_dict
    if connection.vendor == "sqlite":
        where = f"SQLite {db['NAME']} (not the production-style figures: set DATABASE_URL)"
    else:
        where = f"{connection.vendor} {db['NAME']} on {db.get('HOST') or 'local socket'}"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"database: {where}\nmachine: {os.cpu_count()} CPUs, load average {load} (1, 5, 15 min)"


def calls(*steps: tuple[str, dict[str, Any]], final: str) -> list[dict[str, Any]]:
    """One job's script: each tool call in turn, then a final answer."""
    return [{"tool_calls": [{"name": n, "arguments": a}]} for n, a in steps] + [{"content": final}]


def scripts(path: str) -> dict[str, list[dict[str, Any]]]:
    """What each role's model answers; the Coder writes ``path`` (new in every run)."""
    return {
        "planner": [{"content": PLAN}],
        "coder": calls(
            ("create_file", {"path": path, "content": "def greet():\n    return 'hi'\n"}),
            final=f"created {path}",
        ),
        "tester": calls(("read_file", {"path": path}), final="greet() returns 'hi'"),
        "reviewer": calls(
            ("submit_review", {"verdict": "approve", "summary": "looks right"}),
            final="verdict: approve",
        ),
    }


@contextmanager
def scripted_roles(token: str) -> Iterator[Callable[[str], None]]:
    """Route the four roles to scripted endpoints; yield a function that sets the file the
    Coder writes next; put the roles' models back afterwards."""
    from roles.models import EndpointKind, ModelEndpoint
    from roles.registry import registry
    from roles.services import role_write

    def script(path: str) -> None:
        for role, steps in scripts(path).items():
            ModelEndpoint.objects.update_or_create(
                name=f"bench-runs-{role}",
                defaults={
                    "kind": EndpointKind.SCRIPTED,
                    "model": "scripted-bench",
                    "script": steps,
                    "enabled": True,
                },
            )

    script(f"bench_{token}_warm.py")
    registry.sync()
    before = {role: registry.get(role).spec for role in ROLES}
    for role in ROLES:
        role_write(
            data={"preferred_model": f"bench-runs-{role}", "fallback_model": ""},
            create=False,
            slug=role,
            actor="bench",
        )
    try:
        yield script
    finally:
        for role, spec in before.items():
            role_write(
                data={
                    "preferred_model": spec.preferred_model,
                    "fallback_model": spec.fallback_model,
                },
                create=False,
                slug=role,
                actor="bench",
            )


def bench_user() -> Any:
    from django.contrib.auth.models import User

    user, _ = User.objects.get_or_create(username="bench", defaults={"email": "bench@localhost"})
    return user


def session_pool(user: Any, title: str, size: int) -> list[Any]:
    """``size`` idle sessions in Default titled ``title``, reused from run to run (none
    with a failed run: that would raise the next run's risk tier)."""
    from sessions_app.models import AgentSession, RunStatus
    from sessions_app.services.sessions import session_create

    found = list(
        AgentSession.objects.filter(
            owner=user, title=title, active_run=None, current_role__slug="default"
        )
        .exclude(runs__status__in=[RunStatus.FAILED, RunStatus.BLOCKED])
        .order_by("created_at")[:size]
    )
    while len(found) < size:
        found.append(session_create(owner=user, title=title, task="bench/runs.py"))
    return found


def by_hand(session: Any, user: Any) -> list[Any]:
    """The four jobs a run would start, started by a person; returns the jobs."""
    from sessions_app.agent.loop import run_job
    from sessions_app.services.jobs import job_create
    from sessions_app.services.transitions import session_transition

    jobs = []
    for role in ROLES:
        session = session_transition(
            session=session, to_role=role, reason=f"bench: {role}", user=user
        ).session
        job = job_create(session=session, request=f"{REQUEST} ({role})", user=user)
        jobs.append(run_job(job.pk))
    session_transition(session=session, to_role="default", reason="bench: done", user=user)
    return jobs


# The jobs queued and not yet run, in order: what the broker would deliver to a worker
# (``_enqueue`` is stubbed to append here, after the queuing transaction commits).
QUEUED: list[Any] = []


def orchestrated(session: Any, user: Any) -> Any:
    """One medium run, each stage's job run here as the Celery task runs it; the run."""
    from sessions_app.agent.loop import run_job
    from sessions_app.services.runs import run_after_job, run_start

    QUEUED.clear()
    run = run_start(session=session, request=REQUEST, user=user, risk="medium")
    for _ in range(10):
        # What the task's message carries: the job the engine queued. When the last job
        # ended and no stage followed, nothing is queued and the run has ended.
        if not QUEUED:
            break
        job_id = QUEUED.pop(0)
        run_job(job_id)
        run_after_job(job_id)
    return run


def check_hand(session: Any, jobs: list[Any]) -> list[str]:
    from sessions_app.models import JobStatus

    bad = [f"by hand: {j.role.slug} job {j.status} {j.error_code} {j.error_message}" for j in jobs]
    bad = [b for b, j in zip(bad, jobs, strict=True) if j.status != JobStatus.SUCCEEDED]
    if session.pending_changes.exists():
        bad.append(f"by hand: session {session.pk} has uncommitted changes")
    return bad


def check_run(run: Any) -> list[str]:
    from sessions_app.models import RunStatus

    run.refresh_from_db()
    if run.status != RunStatus.SUCCEEDED:
        return [f"run {run.pk}: {run.status} {run.error_code} {run.message}"]
    purposes = list(run.stages.order_by("seq").values_list("purpose", flat=True))
    if purposes != ["plan", "code", "test", "review"]:
        return [f"run {run.pk}: stages {purposes}"]
    roles = list(
        run.session.transitions.order_by("-seq").values_list("to_role__name", flat=True)[:5]
    )
    if roles[::-1] != HISTORY:
        return [f"run {run.pk}: history ends {roles[::-1]}"]
    return []


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall, this process's CPU) seconds of one call, and its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def queries(fn: Callable[[], Any]) -> tuple[int, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        result = fn()
    return len(captured.captured_queries), result


def bench_runs(n: int) -> list[str]:
    from sessions_app.services import jobs as jobs_module

    errors: list[str] = []
    user = bench_user()
    token = uuid.uuid4().hex[:8]
    extra = WARMUP + 1  # warm-up runs and the one whose queries are counted
    manual_pool = session_pool(user, "bench runs by hand", n + extra)
    run_pool = session_pool(user, "bench runs orchestrated", n + extra)
    print(
        f"== runs: {n} medium runs (Planner, Coder, Tester, Reviewer; scripted) against the "
        "same 4 jobs started by hand, interleaved, in this process"
    )
    hand_wall: list[float] = []
    run_wall: list[float] = []
    hand_cpu = run_cpu = 0.0
    with (
        scripted_roles(token) as script,
        # The jobs run here: no broker publish, no question whether a worker consumes it.
        mock.patch.object(jobs_module, "_enqueue", lambda job, queue: QUEUED.append(job.pk)),
        mock.patch.object(jobs_module, "_warn_if_unconsumed", lambda job, queue: None),
    ):
        for i in range(WARMUP):
            script(f"bench_{token}_warm_{i}.py")
            errors += check_hand(manual_pool[i], by_hand(manual_pool[i], user))
            errors += check_run(orchestrated(run_pool[i], user))
        script(f"bench_{token}_count.py")
        hand_queries, jobs = queries(lambda: by_hand(manual_pool[WARMUP], user))
        errors += check_hand(manual_pool[WARMUP], jobs)
        run_queries, run = queries(lambda: orchestrated(run_pool[WARMUP], user))
        errors += check_run(run)
        for i in range(extra, n + extra):
            script(f"bench_{token}_{i}.py")
            # Alternate which arm goes first, so neither always runs on a warmer cache.
            for arm in ("hand", "run") if i % 2 else ("run", "hand"):
                if arm == "hand":
                    wall, cpu, jobs = timed(partial(by_hand, manual_pool[i], user))
                    hand_wall.append(wall)
                    hand_cpu += cpu
                    errors += check_hand(manual_pool[i], jobs)
                else:
                    wall, cpu, run = timed(partial(orchestrated, run_pool[i], user))
                    run_wall.append(wall)
                    run_cpu += cpu
                    errors += check_run(run)
    hand_p50, run_p50 = statistics.median(hand_wall), statistics.median(run_wall)
    ratio = run_p50 / hand_p50
    print(f"{'':<62}{'p50 wall':>12}{'mean wall':>12}{'mean cpu':>12}{'queries':>9}")
    for label, walls, cpu, count in (
        (
            "baseline 4 jobs by hand (transition + job_create + run_job)",
            hand_wall,
            hand_cpu,
            hand_queries,
        ),
        (
            "measured 1 run (run_start + run_job/run_after_job per stage)",
            run_wall,
            run_cpu,
            run_queries,
        ),
    ):
        print(
            f"{label:<62}{fmt_time(statistics.median(walls)):>12}"
            f"{fmt_time(statistics.fmean(walls)):>12}{fmt_time(cpu / n):>12}{count:>9}"
        )
    mean_ratio = statistics.fmean(run_wall) / statistics.fmean(hand_wall)
    extra_ms = run_p50 - hand_p50
    print(
        f"{verdict(ratio, TARGET_RATIO)} orchestration overhead: run / by hand = {ratio:.3f}x "
        f"(p50 wall; {mean_ratio:.3f}x of the means; cpu {run_cpu / hand_cpu:.3f}x)  "
        f"target under {TARGET_RATIO}x"
    )
    print(
        f"info     the engine's share: {_ms(extra_ms)} a run, {_ms(extra_ms / 4)} a stage; "
        f"{run_queries - hand_queries} more queries a run ({(run_queries - hand_queries) / 4:.0f}"
        " a stage)"
    )
    record(
        "medium run, p50 wall",
        run_p50 * 1e3,
        "ms",
        baseline=hand_p50 * 1e3,
        target=hand_p50 * 1e3 * TARGET_RATIO,
        note=f"baseline: the same 4 scripted jobs by hand; {n} of each, interleaved",
    )
    record(
        "orchestration overhead, run / by hand (p50 wall)",
        ratio,
        "x",
        target=TARGET_RATIO,
        note=f"{_ms(extra_ms / 4)} a stage; cpu {run_cpu / hand_cpu:.2f}x",
    )
    record("queries a run", run_queries, "queries", baseline=hand_queries, note="by hand: baseline")
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs (and hand-made runs) timed")
    args = parser.parse_args()
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)  # in order with log lines, live under make
    # The jobs are light on purpose (the Tester reads the file): a run here passes without
    # tests, as the suite's runs do (bench/run_engine.py measures runs whose Tester runs them).
    os.environ.setdefault("ACODE_RUN_REQUIRE_TESTS_TIERS", "")
    django_setup()
    # Django's logging config sends INFO to the console; keep the report readable.
    for name in ("sessions_app", "roles", "acode"):
        logging.getLogger(name).setLevel(logging.WARNING)
    print(header())
    errors = bench_runs(args.runs)
    if errors:
        print(f"ERROR {len(errors)} failures, first: {errors[:5]}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
