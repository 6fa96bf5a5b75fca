"""Role transitions over HTTP against a production-style server, next to a trivial endpoint.

Starts daphne on 127.0.0.1 with the configured database (PostgreSQL in production) and
Redis, then measures, in the same run and with the same keep-alive client threads,
``GET /api/me/`` (the trivial authenticated JSON endpoint) and ``POST
/api/sessions/{id}/transition/`` alternating Planner and Default with ``expected_role``.
Each client thread toggles its own session, so the figures are for transitions that
succeed, not for lock waits between clients.

Targets (issue acceptance): transition p50 under 5 ms, p99 under 20 ms, and transition
throughput at least half the trivial endpoint's.

    python bench/transitions.py [--clients 4] [--requests 2000] [--seconds 10]
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from _setup import django_setup, fmt_time, verdict, web_server

P50_TARGET = 5e-3
P99_TARGET = 20e-3
RATIO_TARGET = 0.5
OTHER_ROLE = {"default": "planner", "planner": "default"}

# One request made by one client thread: takes the thread's client, returns the status.
Call = Callable[[httpx.Client], int]


@dataclass(frozen=True)
class Measurement:
    """Latencies of one endpoint under load and the throughput they came with."""

    label: str
    latencies: list[float]
    elapsed: float
    errors: list[str]

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.elapsed if self.elapsed else 0.0

    def percentile(self, p: float) -> float:
        # Nearest rank: the smallest latency at or above p percent of the samples.
        if not self.latencies:
            return float("inf")  # nothing succeeded: a miss, not a crash
        ordered = sorted(self.latencies)
        rank = max(1, round(p / 100 * len(ordered) + 0.5))
        return ordered[min(rank, len(ordered)) - 1]


def database_note() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url or url.startswith("sqlite"):
        return (
            "note: DATABASE_URL is unset or SQLite; these figures are not the production-style "
            "ones, which need PostgreSQL (and REDIS_URL) set"
        )
    if not os.environ.get("REDIS_URL"):
        return "note: REDIS_URL is unset; the channel layer and cache are in-process, not Redis"
    return ""


def prepare(clients: int) -> tuple[str, list[tuple[str, str]]]:
    """A bench user's token and one session per client thread, with its current role.

    The sessions are reused from run to run, so running the bench against a working
    database (``make bench`` uses the dev one) leaves a fixed handful of them behind.
    """
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from sessions_app.models import AgentSession
    from sessions_app.services import session_create, session_transition

    user, _ = User.objects.get_or_create(username="bench", defaults={"email": "bench@localhost"})
    token, _ = Token.objects.get_or_create(user=user)
    sessions = []
    for n in range(clients):
        title = f"bench transitions {n}"
        session = AgentSession.objects.filter(owner=user, title=title).select_related(
            "current_role"
        ).first() or session_create(owner=user, title=title, task="bench/transitions.py")
        if session.current_role.slug not in OTHER_ROLE:
            # Someone moved a bench session elsewhere; Default is always reachable.
            session = session_transition(
                session=session, to_role="default", reason="bench reset", user=user
            ).session
        sessions.append((str(session.pk), session.current_role.slug))
    return token.key, sessions


def run_load(
    label: str,
    clients: list[httpx.Client],
    calls: list[Call],
    *,
    requests: int,
    seconds: float,
    warmup: int,
) -> Measurement:
    """Each thread makes ``warmup`` calls, then all share ``requests`` within ``seconds``."""
    per_thread = -(-requests // len(clients))
    # Warm-up is bounded in time as well, so a pathologically slow server still ends soon.
    warm_until = time.perf_counter() + min(seconds, 3.0)
    latencies: list[list[float]] = [[] for _ in clients]
    errors: list[str] = []
    ready = threading.Barrier(len(clients) + 1)
    go = threading.Event()
    deadline = [0.0]

    def worker(i: int) -> None:
        client, call = clients[i], calls[i]
        try:
            for _ in range(warmup):
                if time.perf_counter() >= warm_until:
                    break
                try:
                    call(client)
                except httpx.HTTPError as exc:
                    errors.append(f"warm-up {type(exc).__name__}: {exc}")
        finally:
            ready.wait()
        go.wait()
        mine = latencies[i]
        for _ in range(per_thread):
            start = time.perf_counter()
            if start >= deadline[0]:
                break
            try:
                status = call(client)
            except httpx.HTTPError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if status != 200:
                errors.append(f"HTTP {status}")
                continue
            mine.append(time.perf_counter() - start)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    ready.wait()
    start = time.perf_counter()
    deadline[0] = start + seconds
    go.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    return Measurement(label, [x for xs in latencies for x in xs], elapsed, errors)


def transition_call(session_id: str, current: str) -> Call:
    """A call that moves one session to the other role, stating the role it expects."""
    believed = [current]

    def call(client: httpx.Client) -> int:
        target = OTHER_ROLE[believed[0]]
        response = client.post(
            f"/api/sessions/{session_id}/transition/",
            json={"to_role": target, "reason": "bench", "expected_role": believed[0]},
        )
        if response.status_code == 200:
            believed[0] = target
        elif response.status_code == 409:
            # Someone else moved this session (not expected: one thread per session).
            actual = response.json().get("details", {}).get("current_role")
            if actual in OTHER_ROLE:
                believed[0] = actual
        return response.status_code

    return call


def me_call(client: httpx.Client) -> int:
    return client.get("/api/me/").status_code


def report(m: Measurement) -> str:
    return (
        f"{m.label:<34} {m.rps:8.0f} req/s  p50 {fmt_time(m.percentile(50))}"
        f"  p95 {fmt_time(m.percentile(95))}  p99 {fmt_time(m.percentile(99))}"
        f"  n={len(m.latencies)}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=4, help="concurrent client threads")
    parser.add_argument(
        "--server", choices=["daphne", "uvicorn"], default="daphne", help="ASGI server"
    )
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--requests", type=int, default=2000, help="requests per endpoint")
    parser.add_argument("--seconds", type=float, default=10.0, help="time cap per endpoint")
    parser.add_argument("--warmup", type=int, default=50, help="warm-up calls per thread")
    args = parser.parse_args()

    # Django's logging config sends INFO to the console; one line per request would
    # drown the report.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    note = database_note()
    if note:
        print(note)
    django_setup()
    from django.db import connection

    scratch = Path(tempfile.mkdtemp(prefix="acode-bench-"))
    log = scratch / "daphne.log"
    try:
        token, sessions = prepare(args.clients)
        # The server owns the database from here; keep no idle connection open on it.
        connection.close()
        with web_server(log, server=args.server, workers=args.workers) as web:
            base_url = web.url
            headers = {"Authorization": f"Token {token}"}
            clients = [
                httpx.Client(base_url=base_url, headers=headers, timeout=30.0)
                for _ in range(args.clients)
            ]

            def measure(label: str, calls: list[Call]) -> Measurement:
                return run_load(
                    label,
                    clients,
                    calls,
                    requests=args.requests,
                    seconds=args.seconds,
                    warmup=args.warmup,
                )

            try:
                trivial = measure("GET  /api/me/", [me_call] * len(clients))
                moves = measure(
                    "POST /api/sessions/{id}/transition/",
                    [transition_call(sid, role) for sid, role in sessions],
                )
            finally:
                for client in clients:
                    client.close()
        print(
            f"server: {args.server} ("
            f"{1 if args.server == 'daphne' else args.workers} process"
            f"{'' if args.server == 'daphne' or args.workers == 1 else 'es'}), database {connection.vendor}, "
            f"redis {'yes' if os.environ.get('REDIS_URL') else 'no (in-process layers)'}; "
            f"{args.clients} keep-alive client threads"
        )
        print(f"baseline {report(trivial)}")
        print(f"measured {report(moves)}")
        ratio = moves.rps / trivial.rps if trivial.rps else 0.0
        p50, p99 = moves.percentile(50), moves.percentile(99)
        print(
            f"{verdict(p50, P50_TARGET)} transition p50 {fmt_time(p50).strip()}  target under {fmt_time(P50_TARGET).strip()}"
        )
        print(
            f"{verdict(p99, P99_TARGET)} transition p99 {fmt_time(p99).strip()}  target under {fmt_time(P99_TARGET).strip()}"
        )
        print(
            f"{'OK  ' if ratio >= RATIO_TARGET else 'MISS'} throughput ratio transitions/trivial {ratio:.2f}  target at least {RATIO_TARGET}"
        )
        errors = trivial.errors + moves.errors
        if errors:
            print(f"ERROR {len(errors)} failed requests, first: {errors[:5]}", file=sys.stderr)
            print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
            return 1
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
