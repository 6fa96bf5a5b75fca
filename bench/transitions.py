"""Role transitions over HTTP against a production-style server, next to a trivial endpoint.

Starts the ASGI server (uvicorn by default, or daphne) on 127.0.0.1 with the configured
database (PostgreSQL in production) and Redis, then measures, in the same run and with
the same keep-alive client threads, ``GET /api/me/`` (the trivial authenticated JSON
endpoint) and ``POST /api/sessions/{id}/transition/`` alternating Planner and Default with
``expected_role`` (on PostgreSQL the one-statement path, ``sessions_app/transition_sql.py``).
For comparison it also measures the same transition without ``expected_role``, which
takes the general path (lock, then writes, then commit); the targets apply to the first.
Each client thread toggles its own sessions, so the figures are for transitions that
succeed, not for lock waits between clients.

The endpoints are measured in alternating rounds, so a machine that speeds up or
slows down during the run (shared CPUs) affects both alike. Clients are the standard
library's ``http.client`` on kept-alive connections: the client's own cost per request
is about 0.15 ms, against about 0.4 ms for httpx, and it shares the machine's CPUs.

It also prints the latency of a bare durable write (one-row INSERT and COMMIT) on the
same database: every transition waits for that disk flush, the trivial endpoint never
does, so it bounds how close the two can get on a given machine.

Targets (issue acceptance): transition p50 under 5 ms, p99 under 20 ms, and transition
throughput at least half the trivial endpoint's.

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

from _setup import django_setup, fmt_time, verdict, web_server

P50_TARGET = 5e-3
P99_TARGET = 20e-3
RATIO_TARGET = 0.5
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


def transition_call(session_id: str, current: str, *, state_expected: bool = True) -> Call:
    """A call that moves one session to the other role, stating the role it expects
    (``expected_role``, as automation does) unless ``state_expected`` is False."""
    believed = [current]

    def call(client: Client) -> int:
        target = OTHER_ROLE[believed[0]]
        body: dict[str, object] = {"to_role": target, "reason": "bench"}
        if state_expected:
            body["expected_role"] = believed[0]
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
    args = parser.parse_args()

    note = database_note()
    if note:
        print(note)
    django_setup()
    from django.db import connection

    scratch = Path(tempfile.mkdtemp(prefix="acode-bench-"))
    log = scratch / "server.log"
    try:
        # One session per client thread for each kind of transition call.
        token, sessions = prepare(2 * args.clients)
        stating, plain = sessions[: args.clients], sessions[args.clients :]
        commit = Measurement("database INSERT + COMMIT", durable_commit_latencies(), 0.0, [])
        # The server owns the database from here; keep no idle connection open on it.
        connection.close()
        with web_server(log, server=args.server, workers=args.workers) as web:
            clients = [Client(web.port, token) for _ in range(args.clients)]
            try:
                trivial, moves, general = measure_alternating(
                    clients,
                    [
                        ("GET  /api/me/", [me_call] * len(clients)),
                        (
                            "POST /api/sessions/{id}/transition/",
                            [transition_call(sid, role) for sid, role in stating],
                        ),
                        (
                            "POST ... without expected_role",
                            [transition_call(s, r, state_expected=False) for s, r in plain],
                        ),
                    ],
                    requests=args.requests,
                    rounds=args.rounds,
                    warmup=args.warmup,
                )
            finally:
                for client in clients:
                    client.close()
        processes = 1 if args.server == "daphne" else args.workers
        print(
            f"server: {args.server} ({processes} process{'' if processes == 1 else 'es'}), "
            f"database {connection.vendor}, "
            f"redis {'yes' if os.environ.get('REDIS_URL') else 'no (in-process layers)'}; "
            f"{args.clients} keep-alive client thread{'' if args.clients == 1 else 's'}, "
            f"{args.rounds} alternating rounds"
        )
        print(f"baseline {report(trivial)}")
        print(f"measured {report(moves)}")
        print(f"also     {report(general)}  (the general path: three round trips, not one)")
        print(
            f"floor    {commit.label:<34} {'':>14}  p50 {fmt_time(commit.percentile(50))}"
            f"  p95 {fmt_time(commit.percentile(95))}  p99 {fmt_time(commit.percentile(99))}"
            "  (the disk flush each transition waits for; measured before the server started)"
        )
        ratio = moves.rps / trivial.rps if trivial.rps else 0.0
        p50, p99 = moves.percentile(50), moves.percentile(99)
        print(
            f"{verdict(p50, P50_TARGET)} transition p50 {fmt_time(p50).strip()}"
            f"  target under {fmt_time(P50_TARGET).strip()}"
        )
        print(
            f"{verdict(p99, P99_TARGET)} transition p99 {fmt_time(p99).strip()}"
            f"  target under {fmt_time(P99_TARGET).strip()}"
        )
        print(
            f"{'OK  ' if ratio >= RATIO_TARGET else 'MISS'} throughput ratio "
            f"transitions/trivial {ratio:.2f}  target at least {RATIO_TARGET}"
        )
        errors = trivial.errors + moves.errors + general.errors
        if errors:
            print(f"ERROR {len(errors)} failed requests, first: {errors[:5]}", file=sys.stderr)
            print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
            return 1
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
