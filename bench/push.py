"""Live push latency: from a transition's commit to its fragment at every websocket client.

Starts daphne on 127.0.0.1 as production runs it (ACODE_DEBUG=0, channels-redis on
REDIS_URL; an embedded Redis when REDIS_URL is unset) and a client process holding N
websocket connections (default 200), logged in as the bench user, to one session's page
socket (``/ws/sessions/<id>/``), the board socket (``/ws/board/``) or half to each. Then,
round after round, this process changes the session's role through the service (as a
worker or the CLI would) and takes the time right after the commit; every client takes
the time the pushed fragment showing the new role reaches its socket. Both use the
machine's monotonic clock, so the times compare across the two processes.

In the same run and from the same client process, raw Redis pub/sub is measured the same
way: one PUBLISH of a message the size of the fragment to N subscriber connections, time
to each subscriber. That is the floor the push is printed against.

Targets (issue 5): commit → fragment at every client, p95 under 50 ms, p99 under 100 ms.

    python bench/push.py [--clients 200] [--rounds 30] [--page session|board|mixed]

The clients use autobahn's asyncio websocket client (autobahn is installed already, as a
dependency of daphne). They run in their own process because Django loads daphne, which
sets autobahn up for Twisted, and so that the clients' work does not share this process's
interpreter lock with the transition being timed. Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from _report import record
from _setup import ROOT, django_setup, fmt_time, verdict, web_server

P95_TARGET = 50e-3
P99_TARGET = 100e-3
OTHER_ROLE = {"default": "planner", "planner": "default"}
ROUND_TIMEOUT = 10.0
MAX_HISTORY = 150  # transitions of the bench session before a fresh one is opened
FRAGMENT_SIZE = 6000  # about the size of what a role change pushes to a session page


def now() -> float:
    """The machine-wide monotonic clock (the same in every process)."""
    return time.monotonic()


def percentile(values: list[float], p: float) -> float:
    """Nearest rank: the smallest value at or above p percent of the samples."""
    if not values:
        return float("inf")
    ordered = sorted(values)
    rank = max(1, round(p / 100 * len(ordered) + 0.5))
    return ordered[min(rank, len(ordered)) - 1]


def summary(values: list[float]) -> str:
    return (
        f"p50 {fmt_time(percentile(values, 50))}  p95 {fmt_time(percentile(values, 95))}"
        f"  p99 {fmt_time(percentile(values, 99))}  max {fmt_time(max(values or [0.0]))}"
        f"  n={len(values)}"
    )


# == the client process ================================================================
@dataclass
class Round:
    """One transition: the role the clients wait for, and when each saw it."""

    role: str
    session_id: str
    expected: int
    arrivals: dict[int, float] = field(default_factory=dict)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def shows(self, kind: str, payload: bytes) -> bool:
        """Whether a pushed message shows the session in the new role on that page."""
        if kind == "session":
            # The session header's root tag carries the current role.
            start = payload.find(b'id="session-header"')
            end = payload.find(b">", start)
            return start >= 0 and f'data-role="{self.role}"'.encode() in payload[start:end]
        # The board: the new role's column, holding the session's card.
        start = payload.find(f'id="col-{self.role}"'.encode())
        end = payload.find(b"</section>", start)
        return start >= 0 and f'id="card-{self.session_id}"'.encode() in payload[start:end]

    def saw(self, client: int, at: float) -> None:
        if client not in self.arrivals:
            self.arrivals[client] = at
            if len(self.arrivals) >= self.expected:
                self.done.set()


class Clients:
    """N websocket connections and what they have seen."""

    def __init__(self, port: int, cookie: str, session_id: str, count: int, page: str) -> None:
        self.port, self.cookie, self.session_id = port, cookie, session_id
        self.count, self.page = count, page
        self.round: Round | None = None
        self.synced: set[int] = set()
        self.all_synced = asyncio.Event()
        self.errors: list[str] = []
        self.transports: list[Any] = []

    def protocol(self) -> type[Any]:
        from autobahn.asyncio.websocket import WebSocketClientProtocol

        clients = self

        class PushClient(WebSocketClientProtocol):
            """Timestamps bytes as they arrive, before autobahn parses them."""

            number = 0
            kind = "session"
            last_bytes_at = 0.0

            def data_received(self, data: bytes) -> None:
                self.last_bytes_at = now()
                super().data_received(data)

            def onMessage(self, payload: bytes, isBinary: bool) -> None:
                if self.number not in clients.synced:  # the full fragments sent on connect
                    clients.synced.add(self.number)
                    if len(clients.synced) >= clients.count:
                        clients.all_synced.set()
                current = clients.round
                if current is not None and current.shows(self.kind, payload):
                    current.saw(self.number, self.last_bytes_at)

            def onClose(self, wasClean: bool, code: int | None, reason: str | None) -> None:
                if code not in (1000, None) and clients.round is not None:
                    clients.errors.append(f"client {self.number} closed: {code} {reason}")

        return PushClient

    async def connect(self, batch: int = 25) -> None:
        """Connect every client, ``batch`` handshakes at a time (browsers come and go
        over time; a connect storm is not what is measured here)."""
        for first in range(0, self.count, batch):
            await self._connect(range(first, min(first + batch, self.count)))
            deadline = time.monotonic() + 60
            while len(self.synced) < len(self.transports) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
        await asyncio.wait_for(self.all_synced.wait(), timeout=60)

    async def _connect(self, numbers: range) -> None:
        from autobahn.asyncio.websocket import WebSocketClientFactory

        protocol = self.protocol()
        loop = asyncio.get_running_loop()
        for number in numbers:
            kind = self.page if self.page != "mixed" else ("session", "board")[number % 2]
            path = f"/ws/sessions/{self.session_id}/" if kind == "session" else "/ws/board/"
            factory = WebSocketClientFactory(
                f"ws://127.0.0.1:{self.port}{path}",
                origin=f"http://127.0.0.1:{self.port}",
                headers={"Cookie": f"sessionid={self.cookie}"},
            )
            factory.protocol = protocol
            transport, proto = await loop.create_connection(factory, "127.0.0.1", self.port)
            proto.number, proto.kind = number, kind
            self.transports.append(transport)

    def close(self) -> None:
        for transport in self.transports:
            transport.close()


async def redis_baseline(url: str, subscribers: int, rounds: int) -> list[float]:
    """PUBLISH one message to ``subscribers`` connections; each one's delay, every round."""
    import redis.asyncio as aioredis

    channel = f"acode-bench-push-{os.getpid()}"
    payload = b"x" * FRAGMENT_SIZE
    delays: list[float] = []
    sent_at = [0.0]
    pending = [0]
    round_done = asyncio.Event()
    publisher = aioredis.from_url(url)
    subs = [aioredis.from_url(url).pubsub() for _ in range(subscribers)]

    async def listen(pubsub: Any) -> None:
        async for message in pubsub.listen():
            if message.get("type") != "message":
                continue
            delays.append(now() - sent_at[0])
            pending[0] -= 1
            if pending[0] == 0:
                round_done.set()

    for pubsub in subs:
        await pubsub.subscribe(channel)
    readers = [asyncio.create_task(listen(p)) for p in subs]
    warmup = 3
    try:
        for _ in range(warmup + rounds):
            round_done.clear()
            pending[0] = subscribers
            sent_at[0] = now()
            await publisher.publish(channel, payload)
            await asyncio.wait_for(round_done.wait(), timeout=ROUND_TIMEOUT)
            await asyncio.sleep(0.05)
        return delays[warmup * subscribers :]
    finally:
        for task in readers:
            task.cancel()
        for pubsub in subs:
            await pubsub.aclose()
        await publisher.aclose()


async def client_process(args: argparse.Namespace) -> None:
    """Serve the parent over stdin/stdout, one JSON object per line each way."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    def reply(**data: Any) -> None:
        sys.stdout.write(json.dumps(data) + "\n")
        sys.stdout.flush()

    clients = Clients(args.port, args.cookie, args.session, args.clients, args.page)
    await clients.connect()
    # The measuring instrument must not pause to collect garbage in the middle of a round.
    gc.collect()
    gc.freeze()
    gc.disable()
    reply(ready=True)
    try:
        while line := await reader.readline():
            command = json.loads(line)
            if command["do"] == "arm":
                clients.round = Round(command["role"], args.session, args.clients)
                reply(armed=True)
            elif command["do"] == "collect":
                current = clients.round
                assert current is not None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(current.done.wait(), timeout=ROUND_TIMEOUT)
                clients.round = None
                reply(arrivals=list(current.arrivals.values()), errors=clients.errors)
            elif command["do"] == "redis":
                reply(delays=await redis_baseline(command["url"], command["n"], command["rounds"]))
            elif command["do"] == "quit":
                break
    finally:
        clients.close()
        await asyncio.sleep(0.2)


# == the measuring process =============================================================
@contextlib.contextmanager
def redis_url() -> Iterator[str]:
    """REDIS_URL, or an embedded Redis for the run (set in the environment for Django)."""
    url = os.environ.get("REDIS_URL")
    if url:
        yield url
        return
    from acode.embedded import embedded_redis

    with embedded_redis() as url:
        os.environ["REDIS_URL"] = url
        try:
            yield url
        finally:
            del os.environ["REDIS_URL"]


class ClientProcess:
    """The client process, driven one JSON line at a time."""

    def __init__(self, args: argparse.Namespace, port: int, cookie: str, session_id: str):
        command = [sys.executable, __file__, "--client-process", "--port", str(port)]
        command += ["--cookie", cookie, "--session", session_id]
        command += ["--clients", str(args.clients), "--page", args.page]
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )

    def ask(self, **command: Any) -> dict[str, Any]:
        stdin: IO[str] = self.proc.stdin  # type: ignore[assignment]
        stdin.write(json.dumps(command) + "\n")
        stdin.flush()
        return self.read()

    def read(self) -> dict[str, Any]:
        stdout: IO[str] = self.proc.stdout  # type: ignore[assignment]
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"the client process stopped (exit {self.proc.wait()})")
        return dict(json.loads(line))

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(BrokenPipeError):
                stdin: IO[str] = self.proc.stdin  # type: ignore[assignment]
                stdin.write(json.dumps({"do": "quit"}) + "\n")
                stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def prepare() -> tuple[str, str, str]:
    """The bench session, its current role and a login cookie.

    The session is reused from run to run until its history is longer than a real one's
    (the time-in-role bar reads all of it); then it is archived and a new one opened.
    """
    from django.contrib.auth.models import User
    from django.test import Client

    from sessions_app.models import AgentSession, SessionStatus
    from sessions_app.services.sessions import session_create, session_update
    from sessions_app.services.transitions import session_transition

    user, _ = User.objects.get_or_create(username="bench", defaults={"email": "bench@localhost"})
    session = (
        AgentSession.objects.filter(owner=user, title="bench push", status=SessionStatus.ACTIVE)
        .select_related("current_role")
        .first()
    )
    if session is not None and session.transitions.count() > MAX_HISTORY:
        session_update(session=session, data={"status": SessionStatus.ARCHIVED}, user=user)
        session = None
    if session is None:
        session = session_create(owner=user, title="bench push", task="bench/push.py")
    if session.current_role.slug not in OTHER_ROLE:
        session = session_transition(
            session=session, to_role="default", reason="bench reset", user=user
        ).session
    client = Client()
    client.force_login(user)
    return str(session.pk), session.current_role.slug, client.cookies["sessionid"].value


def transition(session_id: str, to_role: str) -> float:
    """Change the role through the service; the time right after the commit."""
    from django.contrib.auth.models import User
    from django.db import transaction

    from sessions_app.services.transitions import session_transition

    committed: list[float] = []
    user = User.objects.get(username="bench")
    with transaction.atomic():
        # Registered before the service's own callbacks, so it runs first after the
        # commit, before the publish.
        transaction.on_commit(lambda: committed.append(now()))
        session_transition(session=session_id, to_role=to_role, reason="bench push", user=user)
    return committed[0]


def measure(args: argparse.Namespace) -> int:
    scratch = Path(tempfile.mkdtemp(prefix="acode-bench-push-"))
    per_client: list[float] = []
    per_round: list[float] = []
    errors: list[str] = []
    try:
        with redis_url() as url:
            django_setup()
            from django.db import connection

            session_id, role, cookie = prepare()
            vendor = connection.vendor
            with web_server(scratch / "daphne.log") as web:
                port = web.port
                clients = ClientProcess(args, port, cookie, session_id)
                try:
                    clients.read()  # ready: every client connected and got its first push
                    for number in range(args.warmup + args.rounds):
                        role = OTHER_ROLE[role]
                        clients.ask(do="arm", role=role)
                        committed = transition(session_id, role)
                        result = clients.ask(do="collect")
                        arrivals = result["arrivals"]
                        if len(arrivals) < args.clients:
                            errors.append(
                                f"round {number}: {len(arrivals)}/{args.clients} clients got it"
                            )
                        errors.extend(result["errors"])
                        if number >= args.warmup and arrivals:
                            delays = [at - committed for at in arrivals]
                            per_client.extend(delays)
                            per_round.append(max(delays))
                        time.sleep(args.pause)
                    raw_many = clients.ask(do="redis", url=url, n=args.clients, rounds=args.rounds)
                    raw_one = clients.ask(do="redis", url=url, n=1, rounds=args.rounds * 5)
                finally:
                    clients.stop()
            log_tail = (scratch / "daphne.log").read_text(errors="replace")[-3000:]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    socket = {"session": "/ws/sessions/<id>/", "board": "/ws/board/", "mixed": "half each"}
    print(
        f"server: daphne (1 process) + channels-redis, database {vendor}; "
        f"{args.clients} websocket clients on {socket[args.page]}; "
        f"{args.rounds} transitions (+{args.warmup} warm-up)"
    )
    if vendor == "sqlite":
        print("note: the database is SQLite; production-style figures need PostgreSQL")
    many, one = raw_many["delays"], raw_one["delays"]
    print(f"baseline raw Redis PUBLISH → {args.clients} subscribers  {summary(many)}")
    print(f"baseline raw Redis PUBLISH → 1 subscriber     {summary(one)}")
    print(f"measured commit → fragment, each client      {summary(per_client)}")
    print(f"measured commit → fragment at every client   {summary(per_round)}  (per round)")
    p95, p99 = percentile(per_client, 95), percentile(per_client, 99)
    print(
        f"{verdict(p95, P95_TARGET)} push p95 {fmt_time(p95).strip()}  target under "
        f"{fmt_time(P95_TARGET).strip()}  (raw Redis p95 {fmt_time(percentile(many, 95)).strip()})"
    )
    print(
        f"{verdict(p99, P99_TARGET)} push p99 {fmt_time(p99).strip()}  target under "
        f"{fmt_time(P99_TARGET).strip()}  (raw Redis p99 {fmt_time(percentile(many, 99)).strip()})"
    )
    audience = f"{args.clients} clients on {socket[args.page]}"
    record(
        "commit → fragment p95, each client",
        p95 * 1e3,
        "ms",
        target=P95_TARGET * 1e3,
        baseline=percentile(many, 95) * 1e3,
        note=f"{audience}; baseline: raw Redis PUBLISH to as many subscribers",
    )
    record(
        "commit → fragment p99, each client",
        p99 * 1e3,
        "ms",
        target=P99_TARGET * 1e3,
        baseline=percentile(many, 99) * 1e3,
        note=audience,
    )
    record(
        "commit → fragment at every client, p95 per round", percentile(per_round, 95) * 1e3, "ms"
    )
    if errors:
        print(f"ERROR {len(errors)} problems, first: {errors[:5]}", file=sys.stderr)
        print(log_tail, file=sys.stderr)
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200, help="websocket clients")
    parser.add_argument("--rounds", type=int, default=30, help="measured transitions")
    parser.add_argument("--warmup", type=int, default=3, help="transitions not measured")
    parser.add_argument("--pause", type=float, default=0.2, help="seconds between rounds")
    parser.add_argument(
        "--page", choices=["session", "board", "mixed"], default="session", help="socket"
    )
    # Internal: how the measuring process starts the client process.
    parser.add_argument("--client-process", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cookie", help=argparse.SUPPRESS)
    parser.add_argument("--session", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client_process:
        asyncio.run(client_process(args))
        return 0
    return measure(args)


if __name__ == "__main__":
    raise SystemExit(main())
