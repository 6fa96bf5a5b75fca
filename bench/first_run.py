"""First run: what a newcomer gets from the embedded model, with and without constrained
tool calls (issue 27).

Small single-file requests (``REQUESTS`` below, the first ``ACODE_BENCH_FIRST_RUN_REQUESTS``
of them, default 20), each in a fresh session whose workspace holds a few tiny files, go
through a low-risk run (Coder, Tester, Reviewer) twice, interleaved request by request:

- constrained: the model endpoint constrains answers with a JSON schema, the union of the
  role's tools (each with its own arguments and required fields) and the final answer;
- unconstrained: the same endpoint with the constraint off (the native tools API, as with
  ``ACODE_LLM_JSON_SCHEMA=0``).

The model is the embedded default served by llama.cpp on a port of its own (or the GGUF in
``ACODE_LLM_MODEL_PATH``, with ``ACODE_LLM_CHAT_FORMAT`` when it has no chat template); the
jobs run in this process as the worker runs them. The report says how many runs completed
and where the others stopped (stage, error code), how many tool calls were refused for
their arguments, LLM calls and wall time per run. There is no target: the figures are what
the model does. Every run gets the same LLM-call budget (``ACODE_BENCH_FIRST_RUN_CALLS``,
default 10: the low template's budget for the bench, restored afterwards), so a model
going round in circles costs minutes, not hours; a model request may take up to
``ACODE_BENCH_FIRST_RUN_TIMEOUT`` seconds (default 900: two shared cores are slow).

    python bench/first_run.py [--requests N] [--calls N]
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from _report import record
from _setup import django_setup

ROLES = ("coder", "tester", "reviewer", "planner", "explorer")
ARMS = ("constrained", "unconstrained")

# The workspace every request starts from: a few tiny files, committed.
FILES = {
    "calc.py": "def sub(a, b):\n    return a - b\n",
    "text.py": "def shout(s):\n    return s.upper()\n",
    "test_calc.py": "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n",
    "README.md": "# Toolbox\n\nSmall helpers.\n",
}

# Small single-file requests a newcomer types first; none names a sensitive path or word,
# so every run stays low risk.
REQUESTS = [
    "Add a function add(a, b) to calc.py that returns a + b.",
    "Add a function mul(a, b) to calc.py that returns a * b.",
    "Add a function is_even(n) to calc.py that returns True when n is even.",
    "Add a function square(x) to calc.py that returns x * x.",
    "Add a docstring to the function sub in calc.py.",
    "Add a function whisper(s) to text.py that returns s.lower().",
    "Add a function reverse(s) to text.py that returns the string reversed.",
    "Add a function count_words(s) to text.py that returns the number of words in s.",
    "Create greet.py with a function greet(name) that returns 'Hello, ' + name.",
    "Create hello.py that prints hello world.",
    "Add a section '## Usage' to README.md.",
    "Add a test test_sub_negative to test_calc.py checking that sub(1, 3) == -2.",
    "Add a function maximum(a, b) to calc.py that returns the larger of a and b.",
    "Add a function half(x) to calc.py that returns x / 2.",
    "Add a function first_word(s) to text.py that returns the first word of s.",
    "Create units.py with a function km_to_miles(km) that returns km * 0.621371.",
    "Add a function negate(x) to calc.py that returns -x.",
    "Add a function title(s) to text.py that returns s.title().",
    "Create shapes.py with a function area(w, h) that returns w * h.",
    "Add a function absolute(x) to calc.py that returns the absolute value of x.",
]


@dataclass
class Arm:
    name: str
    endpoint: str
    completed: int = 0
    stops: Counter[str] = field(default_factory=Counter)
    seconds: list[float] = field(default_factory=list)
    llm_calls: int = 0
    tool_calls: int = 0
    bad_arguments: int = 0
    denied: int = 0


def bench_user() -> Any:
    from django.contrib.auth.models import User

    user, _ = User.objects.get_or_create(username="bench", defaults={"email": "bench@localhost"})
    return user


@contextmanager
def routed_to(base_url: str, model: str, token: str) -> Iterator[dict[str, str]]:
    """Two endpoints on the one server (constrained, unconstrained); yield their names; the
    roles' models and the low template's budget are put back afterwards."""
    from roles.models import EndpointKind, ModelEndpoint
    from roles.registry import registry

    names = {}
    for arm in ARMS:
        names[arm] = f"bench-first-run-{arm}-{token}"
        ModelEndpoint.objects.create(
            name=names[arm],
            kind=EndpointKind.OPENAI,
            base_url=base_url,
            model=model,
            context_window=8192,
            supports_json_schema=arm == "constrained",
        )
    registry.sync()
    before = {role: registry.get(role).spec for role in ROLES}
    try:
        yield names
    finally:
        from roles.services import role_write

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
        ModelEndpoint.objects.filter(name__in=names.values()).delete()


def route(endpoint: str) -> None:
    from roles.services import role_write

    for role in ROLES:
        role_write(
            data={"preferred_model": endpoint, "fallback_model": ""},
            create=False,
            slug=role,
            actor="bench",
        )


@contextmanager
def low_budget(calls: int) -> Iterator[None]:
    from sessions_app.models import WorkflowTemplate

    template = WorkflowTemplate.objects.get(slug="low")
    before = template.max_llm_calls
    template.max_llm_calls = calls
    template.save(update_fields=["max_llm_calls"])
    try:
        yield
    finally:
        template.max_llm_calls = before
        template.save(update_fields=["max_llm_calls"])


def fresh_session(user: Any, request: str) -> Any:
    """A session whose workspace holds ``FILES``, committed."""
    from sessions_app.services.sessions import session_create
    from sessions_app.services.workspaces import session_git_dir

    session = session_create(owner=user, title="bench first run", task=request)
    root = Path(session.workspace)
    for name, text in FILES.items():
        (root / name).write_text(text)
    git = ["git", f"--git-dir={session_git_dir(session)}", f"--work-tree={root}"]
    git += ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root)}
    subprocess.run([*git, "add", "-A"], cwd=root, check=True, env=env)
    subprocess.run([*git, "commit", "-qm", "fixture"], cwd=root, check=True, env=env)
    return session


QUEUED: list[Any] = []


def one_run(user: Any, request: str) -> Any:
    """A low-risk run of ``request``, each stage's job run here as the Celery task does."""
    from sessions_app.agent.loop import run_job
    from sessions_app.services.runs import run_after_job, run_start

    QUEUED.clear()
    run = run_start(session=fresh_session(user, request), request=request, user=user)
    while QUEUED:
        job_id = QUEUED.pop(0)
        run_job(job_id)
        run_after_job(job_id)
    run.refresh_from_db()
    return run


def where_it_stopped(run: Any) -> str:
    """The stage a run ended in and why, in words (the error table's title)."""
    from acode.error_codes import ERROR_CODES

    last = run.stages.select_related("role").order_by("-seq").first()
    stage = last.role.name if last is not None and last.role is not None else "approval"
    if run.error_code:
        title = ERROR_CODES[run.error_code].title
        return f"{stage}: {run.error_code} {title}"
    return f"{stage}: {run.get_status_display()}"


def tally(arm: Arm, run: Any, seconds: float) -> None:
    from sessions_app.models import Job, JobEvent, JobEventKind, RunStatus

    arm.seconds.append(seconds)
    jobs = Job.objects.filter(run_stage__run=run)
    arm.llm_calls += sum(j.llm_calls for j in jobs)
    events = JobEvent.objects.filter(job__in=jobs)
    arm.tool_calls += events.filter(kind=JobEventKind.TOOL_CALL).count()
    denied = events.filter(kind=JobEventKind.TOOL_DENIED)
    arm.denied += denied.count()
    arm.bad_arguments += denied.filter(data__code="ACODE-TOL-001").count()
    if run.status == RunStatus.SUCCEEDED:
        arm.completed += 1
    else:
        arm.stops[where_it_stopped(run)] += 1


def bench(n: int, calls: int, base_url: str, model: str) -> dict[str, Arm]:
    from sessions_app.services import jobs as jobs_module

    user = bench_user()
    token = uuid.uuid4().hex[:8]
    arms: dict[str, Arm] = {}
    with (
        routed_to(base_url, model, token) as endpoints,
        low_budget(calls),
        # The jobs run here: no broker publish, no question whether a worker consumes it.
        mock.patch.object(jobs_module, "_enqueue", lambda job, queue: QUEUED.append(job.pk)),
        mock.patch.object(jobs_module, "_warn_if_unconsumed", lambda job, queue: None),
    ):
        arms = {name: Arm(name, endpoints[name]) for name in ARMS}
        for i, request in enumerate(REQUESTS[:n]):
            # Alternate which arm goes first, so neither always meets a warmer server.
            for name in ARMS if i % 2 == 0 else ARMS[::-1]:
                arm = arms[name]
                route(arm.endpoint)
                started = time.perf_counter()
                run = one_run(user, request)
                tally(arm, run, time.perf_counter() - started)
                outcome = "completed" if run.status == "succeeded" else where_it_stopped(run)
                print(
                    f"  {i + 1:>2} {name:<13} {time.perf_counter() - started:6.0f} s  "
                    f"{outcome}  | {request}",
                    flush=True,
                )
    return arms


def report(arms: dict[str, Arm], n: int, model: str) -> None:
    print(f"\n== {model}: {n} requests, low-risk runs (Coder, Tester, Reviewer)")
    for arm in arms.values():
        p50 = statistics.median(arm.seconds) if arm.seconds else 0.0
        print(
            f"{arm.name:<13} completed {arm.completed} of {n}; {arm.llm_calls / n:.1f} LLM calls "
            f"a run, {p50:.0f} s a run (median); tool calls {arm.tool_calls}, refused "
            f"{arm.denied} ({arm.bad_arguments} for their arguments)"
        )
        for where, count in arm.stops.most_common():
            print(f"    stopped {count:>2} x  {where}")
        note = f"{model}; {n} requests; same requests in both arms"
        record(f"{arm.name}: runs completed", arm.completed, f"of {n}", note=note)
        record(f"{arm.name}: median wall time a run", p50, "s", note=note)
        record(f"{arm.name}: LLM calls a run", arm.llm_calls / n, "calls", note=note)
        share = arm.bad_arguments / arm.tool_calls * 100 if arm.tool_calls else 0.0
        record(
            f"{arm.name}: tool calls refused for their arguments",
            share,
            "%",
            note=f"{arm.bad_arguments} of {arm.tool_calls} tool calls",
        )
        for where, count in arm.stops.most_common():
            record(f"{arm.name}: stopped at {where}", count, "runs", note=note)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--requests",
        type=int,
        default=int(os.environ.get("ACODE_BENCH_FIRST_RUN_REQUESTS", "20")),
        help=f"how many of the {len(REQUESTS)} requests to run in each arm",
    )
    parser.add_argument(
        "--calls",
        type=int,
        default=int(os.environ.get("ACODE_BENCH_FIRST_RUN_CALLS", "10")),
        help="LLM calls a run may make (the low template's budget during the bench)",
    )
    args = parser.parse_args()
    n = max(1, min(args.requests, len(REQUESTS)))
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)
    django_setup()
    for name in ("sessions_app", "roles", "acode"):
        logging.getLogger(name).setLevel(logging.WARNING)
    from django.conf import settings

    from acode import modelserver

    # Two shared cores answer slowly under load: a request that times out would be counted
    # as the model's failure, which it is not.
    settings.ACODE_LLM_TIMEOUT = float(os.environ.get("ACODE_BENCH_FIRST_RUN_TIMEOUT", "900"))

    served = modelserver.served_model() if modelserver.server_available() else None
    if served is None:
        print("skipped: llama-cpp-python or the embedded model's wheel is not installed")
        return 0
    print(f"model: {served.path.name} ({served.alias}); {n} requests; {args.calls} LLM calls a run")
    log = Path(tempfile.gettempdir()) / f"acode-bench-first-run-{os.getpid()}.log"
    with modelserver.embedded_model_server(log=log, model=served) as base_url:
        arms = bench(n, args.calls, base_url, served.alias)
    report(arms, n, served.alias)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
