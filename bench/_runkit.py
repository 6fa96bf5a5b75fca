"""Shared by ``run_engine.py`` and ``run_walk.py``: a medium run with scripted models, and
the same jobs done by hand, through public services only (so the scripts measure the
same thing before and after a refactor of the run engine).

The medium template runs Planner, then Coder, Tester and Reviewer for each step of the
plan. The Planner answers a plan of ``steps`` steps; the Coder creates one file per step;
the Tester reads it; the Reviewer approves. Each run happens in a fresh session, so the
n-th job of a role replays the n-th script (``ScriptedProvider``'s per-job scripts).

No message reaches a broker: the job task's ``apply_async`` only notes the job id (what a
worker would receive) in ``QUEUED``, and a worker is announced as consuming the four roles'
queues (as in production, where one does), so neither arm writes a "no consumer" note.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

ROLES = ("planner", "coder", "tester", "reviewer")
STEP_ROLES = ("coder", "tester", "reviewer")
REQUEST = "Add greeting helpers"
ENDPOINT_PREFIX = "bench-run-engine-"

# The job ids the engine (or a person's job_create) queued, in order: what a worker would
# be handed. Filled by the stubbed ``apply_async``.
QUEUED: list[str] = []


def step_file(number: int) -> str:
    return f"greet_{number}.py"


def code(number: int) -> str:
    return f"def greet_{number}():\n    return {number}\n"


def test_file(number: int) -> str:
    return f"tests/test_greet_{number}.py"


def test_code(number: int) -> str:
    module = step_file(number).removesuffix(".py").replace("/", ".")
    return (
        f"from {module} import greet_{number}\n\n\n"
        f"def test_greet_{number}():\n    assert greet_{number}() == {number}\n"
    )


def plan_answer(steps: int) -> str:
    return json.dumps(
        {
            "steps": [
                {"title": f"Add greeting helper {n}", "files": [step_file(n)]}
                for n in range(1, steps + 1)
            ]
        }
    )


def calls(*steps: tuple[str, dict[str, Any]], final: str) -> list[dict[str, Any]]:
    """One job's script: each tool call in turn, then a final answer."""
    return [{"tool_calls": [{"name": n, "arguments": a}]} for n, a in steps] + [{"content": final}]


def role_scripts(steps: int) -> dict[str, list[list[dict[str, Any]]]]:
    """Per role, one script per job (the n-th job of the role in a session replays the n-th)."""
    numbers = range(1, steps + 1)
    return {
        "planner": [[{"content": plan_answer(steps)}]],
        "coder": [
            calls(
                ("create_file", {"path": step_file(n), "content": code(n)}),
                ("create_file", {"path": test_file(n), "content": test_code(n)}),
                final="created",
            )
            for n in numbers
        ],
        # A medium run passes only with passing tests (issue 34): the Tester runs them.
        "tester": [
            calls(
                ("read_file", {"path": step_file(n)}),
                ("run_tests", {"argv": ["python", "-m", "pytest", "-q", test_file(n)]}),
                final=f"greet_{n}() returns {n}",
            )
            for n in numbers
        ],
        "reviewer": [
            calls(
                ("submit_review", {"verdict": "approve", "summary": "looks right"}),
                final="verdict: approve",
            )
            for _ in numbers
        ],
    }


@contextmanager
def scripted_roles(steps: int) -> Iterator[None]:
    """Route the four roles to scripted endpoints; put their models back afterwards."""
    from roles.models import EndpointKind, ModelEndpoint
    from roles.registry import registry
    from roles.services import role_write

    for role, script in role_scripts(steps).items():
        ModelEndpoint.objects.update_or_create(
            name=f"{ENDPOINT_PREFIX}{role}",
            defaults={
                "kind": EndpointKind.SCRIPTED,
                "model": "scripted-bench",
                "script": script,
                "enabled": True,
            },
        )
    registry.sync()
    before = {role: registry.get(role).spec for role in ROLES}
    for role in ROLES:
        data = {"preferred_model": f"{ENDPOINT_PREFIX}{role}", "fallback_model": ""}
        role_write(data=data, create=False, slug=role, actor="bench")
    try:
        yield
    finally:
        for role, spec in before.items():
            data = {"preferred_model": spec.preferred_model, "fallback_model": spec.fallback_model}
            role_write(data=data, create=False, slug=role, actor="bench")


@contextmanager
def jobs_run_here() -> Iterator[None]:
    """No broker publish (job ids go to ``QUEUED``); a live consumer for the roles' queues."""
    import sessions_app.tasks  # noqa: F401  (registers the job task with the Celery app)
    from acode.celery import app
    from acode.workers import forget_cache, worker_announce, worker_forget
    from roles.registry import registry

    def note(args: tuple[str, ...] = (), **_: Any) -> None:
        QUEUED.append(str(args[0]))

    hostname = f"bench-run-engine@{os.getpid()}"
    queues = sorted({registry.get(role).spec.queue for role in ROLES})
    worker_announce(hostname=hostname, queues=queues, ttl=900)
    forget_cache()
    # Celery makes one Task subclass per task: patching that class touches no other task.
    task_class = type(app.tasks["acode.run_job"])
    try:
        with mock.patch.object(task_class, "apply_async", lambda self, *a, **k: note(*a, **k)):
            yield
    finally:
        worker_forget(hostname=hostname)
        forget_cache()


def bench_user() -> Any:
    from django.contrib.auth.models import User

    user, _ = User.objects.get_or_create(username="bench", defaults={"email": "bench@localhost"})
    return user


def fresh_session(user: Any, title: str) -> Any:
    from sessions_app.services.sessions import session_create

    return session_create(owner=user, title=title, task="bench/run_engine.py")


def _hand_job(
    session: Any, user: Any, role: str, request: str, *, starts_step: int = 0
) -> tuple[Any, Any]:
    """Move the session into ``role`` (marking plan step ``starts_step`` in progress, as the
    engine does for a Coder stage), queue a job there and run it: (session, job)."""
    from sessions_app.agent.loop import run_job
    from sessions_app.services.jobs import job_create
    from sessions_app.services.plans import plan_step_update
    from sessions_app.services.transitions import session_transition

    session = session_transition(
        session=session, to_role=role, reason=f"bench: {role}", user=user
    ).session
    if starts_step:
        session = plan_step_update(
            session=session, number=starts_step, status="in_progress", user=user
        )
    job = job_create(session=session, request=request, user=user)
    return session, run_job(job.pk)


def by_hand(session: Any, user: Any, steps: int) -> list[Any]:
    """What a run does, done by a person: plan, then each step's Coder (step in progress),
    Tester and Reviewer (step done; the approval commits), back to Default. The jobs."""
    from sessions_app.services.plans import plan_step_update
    from sessions_app.services.transitions import session_transition

    session, job = _hand_job(session, user, "planner", REQUEST)
    jobs = [job]
    for number in range(1, steps + 1):
        for role in STEP_ROLES:
            request = f"{REQUEST}: step {number} ({role})"
            starts = number if role == "coder" else 0
            session, job = _hand_job(session, user, role, request, starts_step=starts)
            jobs.append(job)
        session = plan_step_update(session=session, number=number, status="done", user=user)
    session_transition(session=session, to_role="default", reason="bench: done", user=user)
    return jobs


def start_run(session: Any, user: Any) -> Any:
    """``run_start`` of a medium run; its first job is then in ``QUEUED``."""
    from sessions_app.services.runs import run_start

    QUEUED.clear()
    return run_start(session=session, request=REQUEST, user=user, risk="medium")


def run_next_job() -> str | None:
    """Run the next queued job, as a worker does before it calls the engine; its id."""
    from sessions_app.agent.loop import run_job

    if not QUEUED:
        return None
    job_id = QUEUED.pop(0)
    run_job(job_id)
    return job_id


def orchestrated(session: Any, user: Any, *, limit: int = 60) -> Any:
    """One medium run, each job run here then ``run_after_job``, as the Celery task does."""
    from sessions_app.services.runs import run_after_job

    run = start_run(session, user)
    for _ in range(limit):
        job_id = run_next_job()
        if job_id is None:  # nothing queued: the run ended (or waits for a person)
            break
        run_after_job(job_id)
    return run


def check_hand(session: Any, jobs: list[Any], steps: int) -> list[str]:
    from sessions_app.models import JobStatus

    bad = [
        f"by hand: {j.role.slug} job {j.status} {j.error_code} {j.error_message}"
        for j in jobs
        if j.status != JobStatus.SUCCEEDED
    ]
    if len(jobs) != 1 + 3 * steps:
        bad.append(f"by hand: {len(jobs)} jobs")
    if session.pending_changes.exists():
        bad.append(f"by hand: session {session.pk} has uncommitted changes")
    return bad


def check_run(run: Any, steps: int) -> list[str]:
    from sessions_app.models import RunStatus

    run.refresh_from_db()
    if run.status != RunStatus.SUCCEEDED:
        return [f"run {run.pk}: {run.status} {run.error_code} {run.message}"]
    purposes = list(run.stages.order_by("seq").values_list("purpose", flat=True))
    if purposes != ["plan"] + ["code", "test", "review"] * steps:
        return [f"run {run.pk}: stages {purposes}"]
    if run.session.pending_changes.exists():
        return [f"run {run.pk}: uncommitted changes left"]
    return []


@contextmanager
def counting_queries() -> Iterator[list[str]]:
    """Every SQL statement run on the default connection inside the block (cheap: no timing)."""
    from django.db import connection

    seen: list[str] = []

    def wrapper(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        seen.append(sql)
        return execute(sql, *args)

    with connection.execute_wrapper(wrapper):
        yield seen


@dataclass(frozen=True)
class Sample:
    """One timed call: wall and this process's CPU seconds, and the queries it sent."""

    wall: float
    cpu: float
    queries: int


def timed(fn: Callable[[], Any]) -> tuple[Sample, Any]:
    """How long one call took and how many queries it sent, and its result."""
    with counting_queries() as seen:
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        sample = Sample(time.perf_counter() - wall, time.process_time() - cpu, len(seen))
    return sample, result


def header() -> str:
    from django.db import connection

    db = connection.settings_dict
    if connection.vendor == "sqlite":
        where = f"SQLite {db['NAME']} (set DATABASE_URL for PostgreSQL)"
    else:
        where = f"{connection.vendor} {db['NAME']} on {db.get('HOST') or 'local socket'}"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"database: {where}\nmachine: {os.cpu_count()} CPUs, load average {load} (1, 5, 15 min)"


def quiet_logs() -> None:
    """Django's logging config sends INFO to the console; keep the report readable."""
    import logging

    for name in ("sessions_app", "roles", "acode"):
        logging.getLogger(name).setLevel(logging.WARNING)
