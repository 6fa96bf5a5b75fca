"""Role transitions over HTTP next to a trivial endpoint, and audited write throughput.

Starts the ASGI server (uvicorn by default, or daphne) on 127.0.0.1 with the configured
database (PostgreSQL in production) and Redis, then measures, in the same run and with
the same keep-alive client threads, ``GET /api/me/`` (the trivial authenticated JSON
endpoint) and ``POST /api/sessions/{id}/transition/`` alternating Planner and Default.
Each client thread toggles its own sessions, so the figures are for transitions that
succeed, not for lock waits between clients. The endpoints are measured in alternating
rounds, so a machine that speeds up or slows down during the run affects both alike.

Then audited writes per second on 1, 2 and 4 processes, each writing to its own session,
against bare INSERT + COMMIT at the same concurrency (``bench/_writers.py``): the audit
log has no row every writer locks, so it should scale like the bare baseline.

Targets (issue acceptance, relative to figures measured in the same run): transition p50
at most 3x the trivial endpoint's p50; transition p99 at most 4x its own p50; audited
writes scale with processes like bare writes do, within 0.5x.

    python bench/transitions.py [--clients 1] [--requests 4000] [--rounds 10]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _report import record
from _setup import django_setup, fmt_time, web_server
from _writers import measure as measure_writers

P50_RATIO_TARGET = 3.0  # transition p50 / trivial p50
P99_RATIO_TARGET = 4.0  # transition p99 / transition p50
SCALING_TARGET = 0.5  # audited speed-up at N processes / bare speed-up at N
OTHER_ROLE = {"default": "planner", "planner": "default"}

# One request made by one client thread: takes the thread's client, returns the status.
Call = Callable[["Client"], int]


class Client:
    """One kept-alive HTTP/1.1 connection carrying the bench user's token."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.headers = {"Authorization": f"Token {token}"}
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def request(
        self, method: str, path: str, body: dict[str, object] | None = None
    ) -> tuple[int, bytes]:
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()  # reconnect on the next request
            raise

    def close(self) -> None:
        self.conn.close()


ClientError = (OSError, http.client.HTTPException)


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
    from sessions_app.services.sessions import session_create
    from sessions_app.services.transitions import session_transition

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


def run_round(
    clients: list[Client], calls: list[Call], *, requests: int, errors: list[str]
) -> tuple[list[float], float]:
    """All threads make ``requests`` calls between them; their latencies and the wall time."""
    per_thread = -(-requests // len(clients))
    latencies: list[list[float]] = [[] for _ in clients]
    go = threading.Barrier(len(clients) + 1)

    def worker(i: int) -> None:
        client, call, mine = clients[i], calls[i], latencies[i]
        go.wait()
        for _ in range(per_thread):
            start = time.perf_counter()
            try:
                status = call(client)
            except ClientError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if status != 200:
                errors.append(f"HTTP {status}")
                continue
            mine.append(time.perf_counter() - start)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    go.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    return [x for xs in latencies for x in xs], time.perf_counter() - start


def measure_alternating(
    clients: list[Client],
    endpoints: list[tuple[str, list[Call]]],
    *,
    requests: int,
    rounds: int,
    warmup: int,
) -> list[Measurement]:
    """Each endpoint gets ``requests`` calls, split into ``rounds`` rounds taken in turn."""
    errors: dict[str, list[str]] = {label: [] for label, _ in endpoints}
    for label, calls in endpoints:  # warm-up: connections, caches, the server's pools
        run_round(clients, calls, requests=warmup * len(clients), errors=errors[label])
    samples: dict[str, list[float]] = {label: [] for label, _ in endpoints}
    elapsed: dict[str, float] = {label: 0.0 for label, _ in endpoints}
    for _ in range(rounds):
        for label, calls in endpoints:
            lat, took = run_round(
                clients, calls, requests=max(1, requests // rounds), errors=errors[label]
            )
            samples[label] += lat
            elapsed[label] += took
    return [
        Measurement(label, samples[label], elapsed[label], errors[label]) for label, _ in endpoints
    ]


def transition_call(session_id: str, current: str) -> Call:
    """A call that moves one session to the other role, stating the role it expects
    (``expected_role``, as automation does)."""
    believed = [current]

    def call(client: Client) -> int:
        target = OTHER_ROLE[believed[0]]
        body: dict[str, object] = {
            "to_role": target,
            "reason": "bench",
            "expected_role": believed[0],
        }
        status, answer = client.request("POST", f"/api/sessions/{session_id}/transition/", body)
        if status == 200:
            believed[0] = target
        elif status == 409:
            # Someone else moved this session (not expected: one thread per session).
            actual = json.loads(answer).get("details", {}).get("current_role")
            if actual in OTHER_ROLE:
                believed[0] = actual
        return status

    return call


def me_call(client: Client) -> int:
    return client.request("GET", "/api/me/")[0]


def report(m: Measurement) -> str:
    return (
        f"{m.label:<34} {m.rps:8.0f} req/s  p50 {fmt_time(m.percentile(50))}"
        f"  p95 {fmt_time(m.percentile(95))}  p99 {fmt_time(m.percentile(99))}"
        f"  n={len(m.latencies)}"
    )


def durable_commit_latencies(count: int = 500) -> list[float]:
    """Latency of a one-row INSERT and its COMMIT on the bench database, as the bench's
    Django process sees it: the disk flush every write request waits for (none of the
    trivial endpoint's requests do). A table of its own, dropped afterwards."""
    from django.db import connection, transaction

    table = "acode_bench_commit_probe"
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {table} (n integer)")
    latencies = []
    try:
        for n in range(count):
            start = time.perf_counter()
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"INSERT INTO {table} (n) VALUES (%s)", [n])
            latencies.append(time.perf_counter() - start)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE {table}")
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1, help="concurrent client threads")
    parser.add_argument(
        "--server", choices=["uvicorn", "daphne"], default="uvicorn", help="ASGI server"
    )
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument("--requests", type=int, default=4000, help="requests per endpoint")
    parser.add_argument("--rounds", type=int, default=10, help="alternating rounds")
    parser.add_argument("--warmup", type=int, default=100, help="warm-up calls per thread")
    parser.add_argument(
        "--write-seconds", type=float, default=3.0, help="seconds per write-throughput run"
    )
    args = parser.parse_args()

    note = database_note()
    if note:
        print(note)
    django_setup()
    from django.db import connection

    scratch = Path(tempfile.mkdtemp(prefix="acode-bench-"))
    log = scratch / "server.log"
    try:
        token, sessions = prepare(max(args.clients, 4))
        commit = Measurement("database INSERT + COMMIT", durable_commit_latencies(), 0.0, [])
        # The server owns the database from here; keep no idle connection open on it.
        connection.close()
        with web_server(log, server=args.server, workers=args.workers) as web:
            clients = [Client(web.port, token) for _ in range(args.clients)]
            try:
                trivial, moves = measure_alternating(
                    clients,
                    [
                        ("GET  /api/me/", [me_call] * len(clients)),
                        (
                            "POST /api/sessions/{id}/transition/",
                            [transition_call(sid, role) for sid, role in sessions[: args.clients]],
                        ),
                    ],
                    requests=args.requests,
                    rounds=args.rounds,
                    warmup=args.warmup,
                )
            finally:
                for client in clients:
                    client.close()
        writers = measure_writers([sid for sid, _ in sessions[:4]], seconds=args.write_seconds)
        print_report(args, connection.vendor, trivial, moves, commit, writers)
        errors = trivial.errors + moves.errors
        if errors:
            print(f"ERROR {len(errors)} failed requests, first: {errors[:5]}", file=sys.stderr)
            print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
            return 1
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def ok(passed: bool) -> str:
    return "OK  " if passed else "MISS"


def print_report(
    args: argparse.Namespace,
    vendor: str,
    trivial: Measurement,
    moves: Measurement,
    commit: Measurement,
    writers: list[Any],
) -> None:
    processes = 1 if args.server == "daphne" else args.workers
    print(
        f"server: {args.server} ({processes} process{'' if processes == 1 else 'es'}), "
        f"database {vendor}, "
        f"redis {'yes' if os.environ.get('REDIS_URL') else 'no (in-process layers)'}; "
        f"{args.clients} keep-alive client thread{'' if args.clients == 1 else 's'}, "
        f"{args.rounds} alternating rounds"
    )
    print(f"baseline {report(trivial)}")
    print(f"measured {report(moves)}")
    print(
        f"floor    {commit.label:<34} {'':>14}  p50 {fmt_time(commit.percentile(50))}"
        f"  p95 {fmt_time(commit.percentile(95))}  p99 {fmt_time(commit.percentile(99))}"
        "  (the disk flush each transition waits for)"
    )
    p50, p99, base = moves.percentile(50), moves.percentile(99), trivial.percentile(50)
    print(
        f"{ok(p50 <= P50_RATIO_TARGET * base)} transition p50 / trivial p50 = {p50 / base:.2f}"
        f"  target at most {P50_RATIO_TARGET}"
    )
    print(
        f"{ok(p99 <= P99_RATIO_TARGET * p50)} transition p99 / its p50 = {p99 / p50:.2f}"
        f"  target at most {P99_RATIO_TARGET}"
    )
    record("GET /api/me/ p50 (trivial endpoint)", base * 1e3, "ms", note=f"{trivial.rps:.0f} req/s")
    record(
        "POST transition p50",
        p50 * 1e3,
        "ms",
        target=P50_RATIO_TARGET * base * 1e3,
        baseline=base * 1e3,
        note=f"target: {P50_RATIO_TARGET}x the trivial endpoint's p50; {moves.rps:.0f} req/s",
    )
    record("POST transition p99 / its p50", p99 / p50, "x", target=P99_RATIO_TARGET)
    record("INSERT + COMMIT p50 (the disk flush floor)", commit.percentile(50) * 1e3, "ms")
    print("audited writes per second (each process its own session) vs bare INSERT + COMMIT:")
    first = writers[0]
    for rates in writers:
        audited_up = rates.audited / first.audited if first.audited else 0.0
        bare_up = rates.bare / first.bare if first.bare else 0.0
        relative = audited_up / bare_up if bare_up else 0.0
        print(
            f"{ok(relative >= SCALING_TARGET)} {rates.processes} process"
            f"{'' if rates.processes == 1 else 'es'}: audited {rates.audited:8.0f}/s"
            f" (x{audited_up:.2f})  bare {rates.bare:8.0f}/s (x{bare_up:.2f})"
            f"  audited/bare {rates.audited / rates.bare if rates.bare else 0:.2f}"
            f"  scaling vs bare {relative:.2f}  target at least {SCALING_TARGET}"
        )
        record(
            f"audited writes, {rates.processes} process(es)",
            rates.audited,
            "writes/s",
            baseline=rates.bare,
            note="baseline: bare INSERT + COMMIT at the same concurrency",
            higher_is_better=True,
        )
        if rates.processes > 1:
            record(
                f"audited scaling vs bare, {rates.processes} processes",
                relative,
                "x",
                target=SCALING_TARGET,
                higher_is_better=True,
            )


if __name__ == "__main__":
    raise SystemExit(main())
