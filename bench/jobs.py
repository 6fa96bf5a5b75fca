"""Jobs: enforcement per tool call, context assembly, jobs per second through a real worker.

Four measurements, each next to a baseline taken in the same run:

- enforcement: ``tool_check`` per call for allowed and denied calls (Coder, Tester,
  Planner) against a small workspace; baseline one ``os.stat`` of the same file.
  Target: under 100 µs a call.
- context assembly: ``build_context`` over the installed Django package source (a plain
  directory of thousands of files), best of a few runs; baseline listing its files.
  Targets (spec NFRs): broad under 500 ms, focused under 200 ms.
- jobs per second: Explorer routed to a scripted endpoint with two steps (one
  ``read_file`` call, then a final answer). In-process (``job_create`` without the broker
  publish, then ``run_job``) one job after another; then through one real Celery worker
  (threads pool, concurrency 4, as `make run` starts it) on a private queue, the jobs created through the REST API of a
  daphne server while API clients watch them. The ratio in-process/worker is the queue's
  overhead in throughput; one job at a time through both gives it in latency.
- memory: peak RSS of the web process and of the worker process tree (main and pool
  children, summed; also PSS, which splits pages the children share with their parent)
  during that load. Targets: web under 200 MB, worker under 250 MB.

Per-call and context verdicts use this process's CPU time: on a busy machine wall time
(printed next to it) also counts waiting for a CPU. The load average is printed first.

The database is ``DATABASE_URL`` (SQLite under ``ACODE_VAR_DIR`` when unset); the worker and
web parts need ``REDIS_URL`` (``make bench`` provides one). Explorer's queue and model are
changed for the run and restored afterwards; a pool of bench sessions is reused run to run.

    python bench/jobs.py [--jobs 30] [--clients 4] [--single 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import logging
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

import httpx
from _report import record
from _setup import ROOT, django_setup, fmt_time, verdict, web_server

TOOL_CHECK_TARGET = 100e-6
BROAD_TARGET = 0.5
FOCUSED_TARGET = 0.2
WEB_RSS_TARGET = 200 * 2**20
WORKER_RSS_TARGET = 250 * 2**20

BROAD_REQUEST = "Add rate limiting to the session middleware"
FOCUSED_REQUEST = "Fix CsrfViewMiddleware in middleware/csrf.py"
ENDPOINT_NAME = "bench-jobs-scripted"
SCRIPT = [
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
    {"content": "Read README.md: a tiny shop service. Nothing else to report."},
]
JOB_REQUEST = "What does this project do? Read the README."
WARMUP_JOBS = 4

T = TypeVar("T")


def _mb(n: float) -> str:
    return f"{n / 2**20:6.1f} MB"


def _ms(seconds: float) -> str:
    return fmt_time(seconds).strip()


def header() -> str:
    from django.db import connection

    db = connection.settings_dict
    if connection.vendor == "sqlite":
        where = f"SQLite {db['NAME']} (not the production-style figures: set DATABASE_URL)"
    else:
        where = f"{connection.vendor} {db['NAME']} on {db.get('HOST') or 'local socket'}"
    redis = os.environ.get("REDIS_URL") or "unset (no broker: worker and web parts skipped)"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"database: {where}; redis: {redis}\n"
        f"machine: {os.cpu_count()} CPUs, load average {load} (1, 5, 15 min)"
    )


def row(prefix: str, cpu: str, wall: str) -> str:
    """A table row: a label, then CPU and wall time in aligned columns."""
    return f"{prefix:<62}{cpu:>12}{wall:>12}"


def per_call_both(
    fn: Callable[[], object], *, seconds: float = 0.3, min_calls: int = 200
) -> tuple[float, float]:
    """Best-of-5 (wall, CPU) time of one call of ``fn``, in seconds (cf. ``_setup.per_call``)."""
    calls = min_calls

    def batch() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            fn()
        return time.perf_counter() - wall, time.process_time() - cpu

    while True:  # size the batch so one batch takes about `seconds / 5`
        wall, cpu = batch()
        if wall >= seconds / 5 or calls >= 50_000_000:
            break
        calls *= 4
    best_wall, best_cpu = wall / calls, cpu / calls
    for _ in range(4):
        wall, cpu = batch()
        best_wall, best_cpu = min(best_wall, wall / calls), min(best_cpu, cpu / calls)
    return best_wall, best_cpu


def best_of(fn: Callable[[], T], runs: int) -> tuple[float, float, T]:
    """Best wall and best CPU time of ``runs`` calls, and the last result."""
    best_wall = best_cpu = float("inf")
    result = fn()  # warm: imports, page cache, regex cache
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best_wall, best_cpu, result


# -- enforcement ----------------------------------------------------------------------
def small_workspace(root: Path) -> Path:
    """A handful of files: what the enforcement checks and the jobs look at."""
    for sub in ("src", "docs", "tests"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "README.md").write_text("# Shop\nA tiny shop service.\n")
    (root / "src" / "app.py").write_text("def total(items):\n    return sum(items)\n")
    (root / "docs" / "notes.md").write_text("Notes.\n")
    (root / "tests" / "test_app.py").write_text(
        "from src.app import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n"
    )
    return root


def bench_enforcement(workspace: Path) -> bool:
    """Print per-call ``tool_check`` times; False when a decision is not the expected one."""
    from roles.registry import registry
    from sessions_app.agent.executor import tool_check

    registry.sync()
    coder = registry.get("coder")
    # Write globs on an in-memory copy: the bench never edits the stored Coder role.
    coder_src = dataclasses.replace(
        coder, spec=dataclasses.replace(coder.spec, write_paths=("src/**", "tests/**"))
    )
    tester = registry.get("tester")
    planner = registry.get("planner")
    pytest_argv = ["python", "-m", "pytest", "-q"]
    cases: list[tuple[str, Any, str, dict[str, Any], bool]] = [
        ("Coder   read_file src/app.py", coder, "read_file", {"path": "src/app.py"}, True),
        (
            "Coder   write_file src/app.py (in src/**)",
            coder_src,
            "write_file",
            {"path": "src/app.py", "content": "x = 1\n"},
            True,
        ),
        (
            "Coder   write_file docs/notes.md (outside)",
            coder_src,
            "write_file",
            {"path": "docs/notes.md", "content": "x\n"},
            False,
        ),
        ("Coder   read_file ../etc/passwd", coder, "read_file", {"path": "../etc/passwd"}, False),
        (
            "Tester  execute_command python -m pytest -q",
            tester,
            "execute_command",
            {"argv": pytest_argv},
            True,
        ),
        (
            "Tester  execute_command rm -rf src",
            tester,
            "execute_command",
            {"argv": ["rm", "-rf", "src"]},
            False,
        ),
        (
            "Planner write_file src/app.py (withheld)",
            planner,
            "write_file",
            {"path": "src/app.py", "content": "x\n"},
            False,
        ),
    ]
    ok = True
    stat_path = workspace / "src" / "app.py"
    plain = {"read_file": object()}
    stat_wall, stat_cpu = per_call_both(lambda: os.stat(stat_path))
    dict_wall, dict_cpu = per_call_both(lambda: plain.get("read_file"))
    print(f"== enforcement: tool_check per call against {workspace}")
    print(row("", "cpu", "wall"))
    print(row("baseline os.stat of the same file", fmt_time(stat_cpu), fmt_time(stat_wall)))
    print(row("info     plain dict lookup", fmt_time(dict_cpu), fmt_time(dict_wall)))
    cpus: list[float] = []
    for label, role, tool, arguments, expected in cases:
        decision = tool_check(role, tool, arguments, workspace)
        if decision.allowed != expected:
            ok = False
            print(
                f"ERROR {label}: expected {'allowed' if expected else 'denied'}, got "
                f"{'allowed' if decision.allowed else 'denied'} {decision.code} {decision.reason}",
                file=sys.stderr,
            )
        wall, cpu = per_call_both(partial(tool_check, role, tool, arguments, workspace))
        cpus.append(cpu)
        shown = "allowed" if decision.allowed else "denied"
        print(
            row(
                f"{verdict(cpu, TOOL_CHECK_TARGET)} {label:<44} {shown}",
                fmt_time(cpu),
                fmt_time(wall),
            )
            + f"  target {_ms(TOOL_CHECK_TARGET)}  ratio to stat {cpu / stat_cpu:5.1f}x"
        )
        record(
            f"tool_check {' '.join(label.split())} ({shown})",
            cpu * 1e6,
            "µs",
            target=TOOL_CHECK_TARGET * 1e6,
            baseline=stat_cpu * 1e6,
            note="CPU time; baseline: os.stat of the same file",
        )
    print(
        f"{verdict(max(cpus), TOOL_CHECK_TARGET)} enforcement overhead per call: mean of the mix "
        f"{_ms(statistics.fmean(cpus))}, worst {_ms(max(cpus))} (cpu)  target under {_ms(TOOL_CHECK_TARGET)}"
    )
    return ok


# -- context --------------------------------------------------------------------------
def bench_context(runs: int) -> None:
    import django

    from sessions_app.agent.context import build_context
    from sessions_app.agent.selection import candidate_files
    from sessions_app.containment.workspace import workspace_files

    root = Path(django.__file__).parent
    list_wall, list_cpu, files = best_of(partial(workspace_files, root), runs)
    kept = candidate_files(root)
    print(
        f"== context assembly over {root} ({len(files)} files, {len(kept)} candidates), best of {runs}"
    )
    print(row("", "cpu", "wall"))
    print(row("baseline list the workspace files", fmt_time(list_cpu), fmt_time(list_wall)))
    for strategy, request, target in (
        ("broad", BROAD_REQUEST, BROAD_TARGET),
        ("focused", FOCUSED_REQUEST, FOCUSED_TARGET),
    ):
        wall, cpu, bundle = best_of(
            partial(
                build_context, workspace=root, role_name="Bench", strategy=strategy, request=request
            ),
            runs,
        )
        modes: dict[str, int] = {}
        for share in bundle.files:
            modes[share.mode] = modes.get(share.mode, 0) + 1
        shown = ", ".join(f"{n} {m}" for m, n in sorted(modes.items()))
        print(
            row(f"{verdict(cpu, target)} {strategy:<8} {request!r}", fmt_time(cpu), fmt_time(wall))
            + f"  target {_ms(target)}  ratio to listing {cpu / list_cpu:4.1f}x  "
            f"{bundle.token_count} of {bundle.budget} tokens; parts: {shown}"
        )
        record(
            f"context assembly, {strategy}",
            cpu * 1e3,
            "ms",
            target=target * 1e3,
            baseline=list_cpu * 1e3,
            note=f"CPU time over {len(files)} files; baseline: listing them",
        )


# -- processes and memory -------------------------------------------------------------
def _proc_kb(path: str, field: str) -> int:
    with suppress(OSError, ValueError), open(path) as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss(pid: int) -> int:
    return _proc_kb(f"/proc/{pid}/status", "VmRSS") * 1024


def peak_rss(pid: int) -> int:
    return _proc_kb(f"/proc/{pid}/status", "VmHWM") * 1024


def pss(pid: int) -> int:
    return _proc_kb(f"/proc/{pid}/smaps_rollup", "Pss") * 1024


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (from /proc/<pid>/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            with suppress(OSError, ValueError), open(f"/proc/{current}/task/{task}/children") as fh:
                todo.extend(int(c) for c in fh.read().split())
    return out


class MemorySampler:
    """Polls process trees; keeps the peak of each tree's summed RSS and summed PSS."""

    def __init__(self, roots: dict[str, int], interval: float = 0.1) -> None:
        self.roots = roots
        self.interval = interval
        self.peak_rss = dict.fromkeys(roots, 0)
        self.peak_pss = dict.fromkeys(roots, 0)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        for name, pid in self.roots.items():
            tree = process_tree(pid)
            self.peak_rss[name] = max(self.peak_rss[name], sum(rss(p) for p in tree))
            self.peak_pss[name] = max(self.peak_pss[name], sum(pss(p) for p in tree))

    def _run(self) -> None:
        while not self.stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> MemorySampler:
        self.sample()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.sample()


@contextmanager
def started(
    argv: list[str], log: Path, ready: Callable[[], bool]
) -> Iterator[subprocess.Popen[bytes]]:
    """Run a server in its own process group until ``ready()``; stop the whole group after."""
    env = {
        **os.environ,
        "ACODE_DEBUG": "0",
        "ACODE_LOG_LEVEL": "WARNING",
        "ACODE_SERVE_STATIC": "0",
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "DJANGO_SETTINGS_MODULE": "acode.settings",
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            # Its own session: Ctrl-C reaches only this script, which then stops the group.
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not ready():
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"{' '.join(argv[1:4])} did not start:\n{tail}")
                time.sleep(0.1)
            yield proc
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            with suppress(ProcessLookupError):  # pool children a dead main left behind
                os.killpg(proc.pid, signal.SIGKILL)


def celery_worker(stack: ExitStack, queue: str, log: Path) -> subprocess.Popen[bytes]:
    """One ``celery worker`` (threads pool, concurrency 4, as `make run` starts it) on ``queue``; ready at " ready." in its log."""
    argv = [sys.executable, "-m", "celery", "-A", "acode", "worker", "-Q", queue]
    argv += ["-c", "4", "-P", "threads", "-n", f"{queue}@%h", "-l", "INFO"]
    argv += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    return stack.enter_context(
        started(argv, log, lambda: log.exists() and b" ready." in log.read_bytes())
    )


# -- jobs -----------------------------------------------------------------------------
def bench_user() -> tuple[Any, str]:
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    user, _ = User.objects.get_or_create(username="bench", defaults={"email": "bench@localhost"})
    token, _ = Token.objects.get_or_create(user=user)
    return user, token.key


def session_pool(user: Any, workspace: Path, size: int) -> list[Any]:
    """``size`` sessions in Explorer on ``workspace``, reused from run to run."""
    # The bench's own directory is attached as a workspace: allow exactly that, here.
    from django.conf import settings
    from django.contrib.auth.models import Permission

    from sessions_app.models import AgentSession
    from sessions_app.services.sessions import session_create
    from sessions_app.services.transitions import session_transition

    user.user_permissions.add(Permission.objects.get(codename="attach_workspace"))
    user = type(user).objects.get(pk=user.pk)  # a fresh permission cache
    settings.ACODE_ATTACH_ROOTS = [*settings.ACODE_ATTACH_ROOTS, str(workspace.parent)]
    found = list(
        AgentSession.objects.filter(
            owner=user, title__startswith="bench jobs ", workspace=str(workspace)
        )
        .select_related("current_role")
        .order_by("title")[:size]
    )
    while len(found) < size:
        found.append(
            session_create(
                owner=user,
                title=f"bench jobs {uuid.uuid4().hex[:8]}",
                task="bench/jobs.py",
                workspace=str(workspace),
            )
        )
    pool = []
    for session in found:
        if session.current_role.slug != "explorer":
            # Explorer is reachable from Default; any other role goes back to Default first.
            for step in ("default", "explorer"):
                session = session_transition(
                    session=session, to_role=step, reason="bench jobs", actor="bench"
                ).session
        pool.append(session)
    return pool


@contextmanager
def explorer_on(queue: str) -> Iterator[None]:
    """Route Explorer to the scripted endpoint on ``queue``; put both back afterwards."""
    from roles.models import EndpointKind, ModelEndpoint
    from roles.registry import registry
    from roles.services import role_write

    ModelEndpoint.objects.update_or_create(
        name=ENDPOINT_NAME,
        defaults={
            "kind": EndpointKind.SCRIPTED,
            "model": "scripted-bench",
            "script": SCRIPT,
            "enabled": True,
        },
    )
    registry.sync()
    before = registry.get("explorer").spec
    role_write(
        data={"queue": queue, "preferred_model": ENDPOINT_NAME, "fallback_model": ""},
        create=False,
        slug="explorer",
        actor="bench",
    )
    try:
        yield
    finally:
        role_write(
            data={
                "queue": before.queue,
                "preferred_model": before.preferred_model,
                "fallback_model": before.fallback_model,
            },
            create=False,
            slug="explorer",
            actor="bench",
        )


def failed_jobs(job_ids: list[Any], label: str) -> list[str]:
    """A line for every job that did not succeed."""
    from sessions_app.models import Job, JobStatus

    bad = (
        Job.objects.filter(pk__in=job_ids)
        .exclude(status=JobStatus.SUCCEEDED)
        .values_list("status", "error_code", "error_message")
    )
    return [f"{label}: {status} {code} {message}" for status, code, message in bad]


def run_in_process(pool: list[Any], user: Any) -> tuple[list[Any], list[float], float]:
    """``job_create`` (broker publish stubbed out) then ``run_job``, one job after another."""
    from sessions_app.agent.loop import run_job
    from sessions_app.services import jobs as jobs_module

    ids, each = [], []
    with mock.patch.object(jobs_module, "_enqueue", lambda job, queue: None):
        for session in pool[:WARMUP_JOBS]:
            run_job(jobs_module.job_create(session=session, request=JOB_REQUEST, user=user).pk)
        start = time.perf_counter()
        for session in pool:
            began = time.perf_counter()
            job = jobs_module.job_create(session=session, request=JOB_REQUEST, user=user)
            run_job(job.pk)
            each.append(time.perf_counter() - began)
            ids.append(job.pk)
        elapsed = time.perf_counter() - start
    return ids, each, elapsed


def wait_final(job_ids: list[Any], timeout: float, poll: float = 0.01) -> float:
    """Wait until every job is final; return when that was seen (``perf_counter``)."""
    from sessions_app.models import FINAL_JOB_STATUSES, Job

    deadline = time.monotonic() + timeout
    while True:
        done = Job.objects.filter(pk__in=job_ids, status__in=FINAL_JOB_STATUSES).count()
        now = time.perf_counter()
        if done == len(job_ids):
            return now
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {done} of {len(job_ids)} jobs finished within {timeout:.0f}s")
        time.sleep(poll)


def api_client(base_url: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, headers={"Authorization": f"Token {token}"}, timeout=30)


def post_job(client: httpx.Client, session_id: str) -> str:
    response = client.post(f"/api/sessions/{session_id}/jobs/", json={"request": JOB_REQUEST})
    if response.status_code != 201:
        raise RuntimeError(f"POST jobs: HTTP {response.status_code}: {response.text[:300]}")
    return str(response.json()["id"])


def post_jobs(
    base_url: str, token: str, session_ids: list[str], clients: int
) -> tuple[list[str], list[float], list[str]]:
    """Create one job per session through the API from ``clients`` keep-alive threads."""
    ids: list[str] = []
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def work(mine: list[str]) -> None:
        with api_client(base_url, token) as client:
            for sid in mine:
                start = time.perf_counter()
                try:
                    job_id = post_job(client, sid)
                except (httpx.HTTPError, RuntimeError) as exc:
                    with lock:
                        errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                with lock:
                    ids.append(job_id)
                    latencies.append(time.perf_counter() - start)

    threads = [
        threading.Thread(target=work, args=(session_ids[i::clients],), daemon=True)
        for i in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return ids, latencies, errors


def watch_jobs(base_url: str, token: str, job_ids: list[str], stop: threading.Event) -> None:
    """What a client watching its jobs does: GET each job with its events, until told to stop."""
    with api_client(base_url, token) as client:
        while not stop.is_set():
            for job_id in job_ids:
                if stop.wait(0.05):
                    return
                with suppress(httpx.HTTPError):
                    client.get(f"/api/jobs/{job_id}/")


def median_phases(job_ids: list[Any]) -> tuple[float, float]:
    """Median queue wait (created to started) and run time (started to finished), seconds."""
    from sessions_app.models import Job

    rows = Job.objects.filter(pk__in=job_ids).values_list("created_at", "started_at", "finished_at")
    waits = [(s - c).total_seconds() for c, s, f in rows if s and f]
    runs = [(f - s).total_seconds() for c, s, f in rows if s and f]
    return (statistics.median(waits) if waits else 0.0, statistics.median(runs) if runs else 0.0)


@dataclasses.dataclass
class WorkerRun:
    """What one worker and one web server did under the bench's load."""

    job_ids: list[str] = dataclasses.field(default_factory=list)
    elapsed: float = 0.0
    post_times: list[float] = dataclasses.field(default_factory=list)
    single_ids: list[str] = dataclasses.field(default_factory=list)
    single_latencies: list[float] = dataclasses.field(default_factory=list)
    idle_rss: dict[str, int] = dataclasses.field(default_factory=dict)
    peak_rss: dict[str, int] = dataclasses.field(default_factory=dict)
    peak_pss: dict[str, int] = dataclasses.field(default_factory=dict)
    worker_process_peaks: list[int] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)


def run_through_worker(
    session_ids: list[str], *, queue: str, token: str, clients: int, single: int, scratch: Path
) -> WorkerRun:
    """Start daphne and one worker; warm up, run jobs one at a time, then all at once."""
    out = WorkerRun()
    with ExitStack() as stack:
        server = stack.enter_context(web_server(scratch / "daphne.log"))
        web, base_url = server.proc, server.url
        worker = celery_worker(stack, queue, scratch / "worker.log")
        out.idle_rss = {
            "web": rss(web.pid),
            "worker": sum(rss(p) for p in process_tree(worker.pid)),
        }
        with MemorySampler({"web": web.pid, "worker": worker.pid}) as sampler:
            # Warm-up: both pool children import the agent and open their connections.
            warm, _, errors = post_jobs(base_url, token, session_ids[:WARMUP_JOBS], 2)
            out.errors += errors
            wait_final(warm, timeout=60)
            # One job at a time: the latency the queue adds to a job.
            with api_client(base_url, token) as client:
                for sid in session_ids[:single]:
                    began = time.perf_counter()
                    out.single_ids.append(post_job(client, sid))
                    out.single_latencies.append(wait_final(out.single_ids[-1:], 30) - began)
            # Throughput: every job at once from the API clients, who then watch theirs.
            stop = threading.Event()
            start = time.perf_counter()
            out.job_ids, out.post_times, errors = post_jobs(base_url, token, session_ids, clients)
            out.errors += errors
            watchers = [
                threading.Thread(
                    target=watch_jobs, args=(base_url, token, out.job_ids[i::clients], stop)
                )
                for i in range(clients)
            ]
            for watcher in watchers:
                watcher.start()
            try:
                out.elapsed = wait_final(out.job_ids, timeout=90) - start
            finally:
                stop.set()
                for watcher in watchers:
                    watcher.join(timeout=10)
        out.peak_rss = {**sampler.peak_rss, "web": max(peak_rss(web.pid), sampler.peak_rss["web"])}
        out.peak_pss = dict(sampler.peak_pss)
        out.worker_process_peaks = [peak_rss(p) for p in process_tree(worker.pid)]
        out.errors += failed_jobs(out.single_ids + out.job_ids, "worker")
        if out.errors:
            for log in ("daphne.log", "worker.log"):
                print(f"-- {log}", file=sys.stderr)
                print((scratch / log).read_text(errors="replace")[-3000:], file=sys.stderr)
    return out


def bench_jobs(n: int, clients: int, single: int, scratch: Path) -> list[str]:
    """In-process against one real worker, with the web server taking the job requests."""
    from django.conf import settings
    from django.db import connection

    errors: list[str] = []
    user, token = bench_user()
    workspace = small_workspace(Path(settings.VAR_DIR) / "bench-jobs-workspace")
    queue = f"bench-jobs-{uuid.uuid4().hex[:8]}"
    pool = session_pool(user, workspace, max(n, WARMUP_JOBS, single))
    print(
        f"== jobs: Explorer on a scripted endpoint (read_file, then a final answer), {n} jobs, "
        f"workspace {workspace}"
    )
    with explorer_on(queue):
        ids, each, elapsed = run_in_process(pool[:n], user)
        errors += failed_jobs(ids, "in-process")
        in_rate = n / elapsed
        _, in_run = median_phases(ids)
        print(
            f"baseline in-process, one after another (job_create + run_job)    {in_rate:6.1f} jobs/s"
            f"  ({_ms(elapsed / n)} a job; run p50 {_ms(in_run)})"
        )
        record("jobs in-process, one after another", in_rate, "jobs/s", higher_is_better=True)
        if not os.environ.get("REDIS_URL"):
            print("SKIP     worker, web and memory: REDIS_URL is unset (no Celery broker)")
            return errors
        # The servers own the database from here; keep no idle connection of ours open on it.
        connection.close()
        run = run_through_worker(
            [str(s.pk) for s in pool[:n]],
            queue=queue,
            token=token,
            clients=clients,
            single=single,
            scratch=scratch,
        )
    errors += run.errors
    rate = len(run.job_ids) / run.elapsed if run.elapsed else 0.0
    wait, run_p50 = median_phases(run.job_ids)
    post_p50 = statistics.median(run.post_times) if run.post_times else 0.0
    print(
        f"measured 1 worker (threads pool, concurrency 4, as `make run` starts it), {clients} API clients      {rate:6.1f} jobs/s"
        f"  (queue wait p50 {_ms(wait)} with {n} jobs on 4 slots, run p50 {_ms(run_p50)}, "
        f"POST p50 {_ms(post_p50)})"
    )
    if rate:
        print(f"info     queue overhead in throughput: in-process / worker = {in_rate / rate:.2f}x")
    record(
        "jobs through 1 worker (threads, concurrency 4)",
        rate,
        "jobs/s",
        baseline=in_rate,
        note=f"{clients} API clients; baseline: in-process, one after another",
        higher_is_better=True,
    )
    in_p50, via_p50 = statistics.median(each), statistics.median(run.single_latencies)
    single_wait, single_run = median_phases(run.single_ids)
    print(
        f"info     queue overhead in latency, one job at a time: POST to final through the "
        f"worker p50 {_ms(via_p50)} (queue wait {_ms(single_wait)}, run {_ms(single_run)}) "
        f"vs in-process p50 {_ms(in_p50)} = {via_p50 / in_p50:.2f}x"
    )
    web, worker = run.peak_rss["web"], run.peak_rss["worker"]
    worker_pss, procs = run.peak_pss["worker"], len(run.worker_process_peaks)
    record(
        "one job at a time, POST to final through the worker, p50",
        via_p50 * 1e3,
        "ms",
        baseline=in_p50 * 1e3,
        note="baseline: in-process p50",
    )
    record("web peak RSS (daphne)", web / 2**20, "MB", target=WEB_RSS_TARGET / 2**20)
    record(
        f"worker peak RSS, {procs} processes summed",
        worker / 2**20,
        "MB",
        target=WORKER_RSS_TARGET / 2**20,
    )
    record(
        f"worker peak PSS, {procs} processes summed",
        worker_pss / 2**20,
        "MB",
        target=WORKER_RSS_TARGET / 2**20,
    )
    print(
        f"{verdict(web, WEB_RSS_TARGET)} web peak RSS, daphne (1 process){'':<14}{_mb(web)}"
        f"  target {_mb(WEB_RSS_TARGET).strip()}  (idle {_mb(run.idle_rss['web']).strip()}, "
        f"peak PSS {_mb(run.peak_pss['web']).strip()})"
    )
    print(
        f"{verdict(worker, WORKER_RSS_TARGET)} worker peak RSS summed over {procs} processes{'':<7}"
        f"{_mb(worker)}  target {_mb(WORKER_RSS_TARGET).strip()}  (idle "
        f"{_mb(run.idle_rss['worker']).strip()}; per-process peaks "
        f"{' + '.join(_mb(h).strip() for h in run.worker_process_peaks)}; "
        "pages shared with the parent counted in every process)"
    )
    print(
        f"{verdict(worker_pss, WORKER_RSS_TARGET)} worker peak PSS summed over {procs} processes{'':<7}"
        f"{_mb(worker_pss)}  target {_mb(WORKER_RSS_TARGET).strip()}  (shared pages split "
        "between the processes that share them)"
    )
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=30, help="jobs in each throughput run")
    parser.add_argument("--clients", type=int, default=4, help="API client threads")
    parser.add_argument("--single", type=int, default=5, help="jobs run one at a time")
    parser.add_argument("--context-runs", type=int, default=3, help="best of this many builds")
    args = parser.parse_args()
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)  # in order with log lines, live under make
    # SIGTERM ends the script through its finally blocks, which stop the servers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    django_setup()
    # Django's logging config sends INFO to the console; keep the report readable.
    for name in ("httpx", "sessions_app", "roles"):
        logging.getLogger(name).setLevel(logging.WARNING)
    print(header())
    print(
        "note: per-call and context verdicts use this process's CPU time; "
        "wall time also counts waiting for a CPU"
    )
    scratch = Path(tempfile.mkdtemp(prefix="acode-bench-jobs-"))
    try:
        ok = bench_enforcement(small_workspace(scratch / "enforcement"))
        bench_context(args.context_runs)
        errors = bench_jobs(args.jobs, args.clients, args.single, scratch)
        if errors:
            print(f"ERROR {len(errors)} failures, first: {errors[:5]}", file=sys.stderr)
        return 0 if ok and not errors else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
