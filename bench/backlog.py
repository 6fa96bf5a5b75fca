"""The backlog's scheduler: what starting a task costs on top of starting its run by hand
(issue 40).

Two arms, interleaved round by round, in this process, starting the same number of
low-risk runs (their first stage's job queued; nothing runs them):

- baseline "by hand": for each request, ``session_create`` then ``run_start``, as a person
  does it through the API;
- measured "scheduler": the same requests as backlog tasks of a project with room for all
  of them, started by one ``backlog_schedule`` tick (tasks follow their runs first, the
  project is locked, its room counted, its ready tasks ranked, each claimed by a
  conditional UPDATE, then the same ``session_create`` and ``run_start``).

The broker publish is stubbed out in both arms. Target: the scheduler's time per task is
under 1.25x the hand's.

    python bench/backlog.py [--rounds 5] [--tasks 8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from unittest import mock

from _report import record
from _setup import django_setup, fmt_time, verdict

TARGET_RATIO = 1.25


def bench(rounds: int, tasks: int) -> list[str]:
    from django.conf import settings
    from django.contrib.auth.models import User

    from sessions_app.models import BacklogTask
    from sessions_app.services import jobs as jobs_module
    from sessions_app.services.backlog import backlog_import, project_create
    from sessions_app.services.backlog_scheduler import backlog_schedule
    from sessions_app.services.runs import run_start
    from sessions_app.services.sessions import session_create

    # Nothing runs the arms' jobs, so they stay queued: the scheduler still counts its
    # first stage's queue for every task, with a limit no round reaches.
    settings.ACODE_BACKLOG_QUEUE_DEPTH = 10**9
    errors: list[str] = []
    user, _ = User.objects.get_or_create(username="bench-backlog")
    token = uuid.uuid4().hex[:8]
    hand: list[float] = []
    scheduled: list[float] = []

    def by_hand(i: int) -> None:
        for n in range(tasks):
            session = session_create(owner=user, title=f"bench hand {token} {i} {n}")
            run_start(session=session, request=f"Task t{n}: do {n}", user=user, risk="low")

    def by_scheduler(i: int) -> None:
        project = project_create(owner=user, slug=f"bench-{token}-{i}", title="bench",
                                 max_concurrent_runs=tasks, run_risk="low")  # fmt: skip
        backlog_import(project=project, actor="bench", document={
            "tasks": [{"key": f"t{n}", "title": f"do {n}"} for n in range(tasks)]})  # fmt: skip
        start = time.perf_counter()
        started = backlog_schedule()
        scheduled.append((time.perf_counter() - start) / tasks)
        if len(started) != tasks:
            errors.append(f"round {i}: the scheduler started {len(started)} of {tasks}")
        # The project's runs are left as they are; the next round's project is another.
        BacklogTask.objects.filter(project=project).update(status="done")

    with (
        mock.patch.object(jobs_module, "_enqueue", lambda job, queue: None),
        mock.patch.object(jobs_module, "_warn_if_unconsumed", lambda job, queue: None),
    ):
        by_hand(-1)  # warm up both
        by_scheduler(-1)
        scheduled.clear()
        for i in range(rounds):
            for arm in ("hand", "scheduler") if i % 2 else ("scheduler", "hand"):
                if arm == "hand":
                    start = time.perf_counter()
                    by_hand(i)
                    hand.append((time.perf_counter() - start) / tasks)
                else:
                    by_scheduler(i)
    hand_p50, sched_p50 = statistics.median(hand), statistics.median(scheduled)
    ratio = sched_p50 / hand_p50
    print(f"baseline by hand (session_create + run_start)  {fmt_time(hand_p50)} a task")
    print(f"measured by the scheduler (one tick)            {fmt_time(sched_p50)} a task")
    print(f"{verdict(ratio, TARGET_RATIO)} scheduling overhead: scheduler / by hand = "
          f"{ratio:.3f}x (p50 per task)  target under {TARGET_RATIO}x")  # fmt: skip
    record(
        "start a task as a run, per task, p50",
        sched_p50 * 1e3,
        "ms",
        baseline=hand_p50 * 1e3,
        target=hand_p50 * 1e3 * TARGET_RATIO,
        note=f"baseline: session_create + run_start by hand; {rounds} rounds of {tasks}",
    )
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=8)
    args = parser.parse_args()
    django_setup()
    errors = bench(args.rounds, args.tasks)
    for error in errors:
        print(f"ERROR {error}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
