"""Reads at volume: the board, the session list API, a session page, audit search and
audit export over 10,000 sessions, 100,000 transitions, 1,000,000 audit events and
100,000 job events (``ACODE_BENCH_SCALE`` times those; default 1.0).

The data is written by ``manage.py acode_generate_data`` into a database of the bench's
own: ``<DATABASE_URL's database>_scale`` on the same PostgreSQL server (or
``ACODE_BENCH_SCALE_DB``), created when missing and filled when it holds less than the
scale asks for (a second run reuses it). Without a PostgreSQL ``DATABASE_URL`` it is a
SQLite file under ``ACODE_VAR_DIR`` at a default scale of 0.05: not the production-style
figures, and the report says so.

Each endpoint is requested through Django's test client (the whole request: middleware,
queries, rendering; no network), warmed up, then ``ACODE_BENCH_SCALE_REQUESTS`` times
(default 30): p50 and p95 against the 200 ms target. The SQL queries one request makes
are printed next to it. Then the whole log is exported once through daphne, as
production serves it: time to the first byte, rows per second and the server's peak
memory (the export streams).

    ACODE_BENCH_SCALE=0.1 python bench/scale.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from _report import record
from _setup import ROOT, fmt_time, verdict, web_server

TARGET = 0.2  # p95, seconds
WARMUP = 3
FULL_AUDIT_EVENTS = 1_000_000
SQLITE_SCALE = 0.05


def is_postgres(url: str) -> bool:
    return url.startswith(("postgres://", "postgresql://", "pgsql://"))


def bench_database(scale_given: str | None) -> tuple[str, float, str]:
    """(DATABASE_URL of the bench's database, scale, note), creating the database."""
    url = os.environ.get("DATABASE_URL", "")
    if not is_postgres(url):
        scale = float(scale_given) if scale_given else SQLITE_SCALE
        var = Path(os.environ.get("ACODE_VAR_DIR") or ROOT / "var")
        var.mkdir(parents=True, exist_ok=True)
        note = (
            f"SQLite ({var / 'bench-scale.sqlite3'}), scale {scale}: not the production-style "
            "figures, which need DATABASE_URL on PostgreSQL"
        )
        return f"sqlite:///{var / 'bench-scale.sqlite3'}", scale, note
    import psycopg

    parts = urlsplit(url)
    name = os.environ.get("ACODE_BENCH_SCALE_DB") or f"{parts.path.lstrip('/') or 'acode'}_scale"
    admin = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as db:
        exists = db.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            db.execute(f'CREATE DATABASE "{name}"')
    scale = float(scale_given) if scale_given else 1.0
    return urlunsplit(parts._replace(path=f"/{name}")), scale, f"PostgreSQL database {name}"


def ensure_data(scale: float) -> None:
    """Generate the volumes unless the database already holds them."""
    from django.core.management import call_command

    from sessions_app.models import AgentSession, AuditEvent

    want_sessions = round(10_000 * scale)
    want_events = round(FULL_AUDIT_EVENTS * scale)
    have_sessions = AgentSession.objects.filter(owner__username__startswith="scale-owner-").count()
    have_events = AuditEvent.objects.count()
    if have_sessions >= want_sessions and have_events >= want_events * 0.99:
        print(
            f"reusing the data: {have_sessions:,} generated sessions, {have_events:,} audit events"
        )
        return
    started = time.perf_counter()
    call_command("acode_generate_data", scale=scale, seed=17)
    took = time.perf_counter() - started
    record(
        "generate data (acode_generate_data)",
        took,
        "s",
        note=f"scale {scale}: {want_events:,} audit events, {want_sessions:,} sessions",
    )


@dataclass(frozen=True)
class Endpoint:
    label: str
    user: str  # "lead" (sees everything) or "owner" (sees own sessions)
    paths: list[str]
    first_row_only: bool = False  # for an export: time to the first row


def endpoints() -> list[Endpoint]:
    import random

    from django.urls import reverse

    from sessions_app.models import AgentSession

    rng = random.Random(17)
    busiest = list(
        AgentSession.objects.order_by("-transition_count").values_list("pk", flat=True)[:5]
    )
    ids = list(AgentSession.objects.values_list("pk", flat=True).order_by("pk")[:2000])
    pages = [
        reverse("dashboard-session", args=[pk])
        for pk in busiest + rng.sample(ids, min(25, len(ids)))
    ]
    longest = AgentSession.objects.order_by("-audit_seq").values_list("pk", flat=True).first()
    session = str(longest) if longest else ""
    first, last, oldest = time_range()
    week = f"since={first}&until={last}"
    return [
        Endpoint("board (team lead: every session)", "lead", ["/"]),
        Endpoint("board (owner)", "owner", ["/"]),
        Endpoint("board searched ?q=cache", "lead", ["/?q=cache"]),
        Endpoint("GET /api/sessions/ (team lead)", "lead", ["/api/sessions/"]),
        Endpoint("GET /api/sessions/ (owner)", "owner", ["/api/sessions/"]),
        Endpoint("GET /api/sessions/?status=active&role=coder", "lead", ["/api/sessions/?status=active&role=coder"]),
        Endpoint("GET /api/sessions/?offset=9000", "lead", ["/api/sessions/?offset=9000"]),
        Endpoint("session page (30 sessions, busiest first)", "lead", pages),
        Endpoint("GET /api/audit/", "lead", ["/api/audit/"]),
        Endpoint("GET /api/audit/ (owner)", "owner", ["/api/audit/"]),
        Endpoint("GET /api/audit/?session= (busiest)", "lead", [f"/api/audit/?session={session}"]),
        Endpoint("GET /api/audit/?event_type=ToolDenied", "lead", ["/api/audit/?event_type=ToolDenied"]),
        Endpoint("GET /api/audit/?event_type=RoleEdited (rare)", "lead", ["/api/audit/?event_type=RoleEdited"]),
        Endpoint("GET /api/audit/?actor=scale-owner-3", "lead", ["/api/audit/?actor=scale-owner-3"]),
        Endpoint("GET /api/audit/?since&until (a week, 3 months back)", "lead", [f"/api/audit/?{week}"]),
        Endpoint("GET /api/audit/?role=reviewer&since&until (a week)", "lead", [f"/api/audit/?role=reviewer&{week}"]),
        Endpoint("GET /api/audit/?until= (the first week)", "lead", [f"/api/audit/?until={oldest}"]),
        Endpoint("GET /api/audit/?last=1000", "lead", ["/api/audit/?last=1000"]),
        Endpoint("audit page", "lead", ["/audit/"]),
        Endpoint("audit page (owner)", "owner", ["/audit/"]),
        Endpoint("audit page ?event_type=ToolDenied&page=5", "lead", ["/audit/?event_type=ToolDenied&page=5"]),
        Endpoint("audit page ?session= (busiest)", "lead", [f"/audit/?session={session}"]),
        Endpoint("audit page ?since&until (a week)", "lead", [f"/audit/?{week}"]),
        Endpoint("export jsonl ?session= (busiest, whole)", "lead", [f"/api/audit/export/?format=jsonl&session={session}"]),
        Endpoint("export csv ?last=1000 (whole)", "lead", ["/api/audit/export/?format=csv&last=1000"]),
        Endpoint("export jsonl, everything: first row", "lead", ["/api/audit/export/?format=jsonl"], True),
        Endpoint("export jsonl ?since&until (a week): first row", "lead", [f"/api/audit/export/?format=jsonl&{week}"], True),
    ]  # fmt: skip


def time_range() -> tuple[str, str, str]:
    """A week in the middle of the history, and the end of its first week, as query
    parameters."""
    from datetime import timedelta
    from urllib.parse import quote

    from django.db.models import Max, Min

    from sessions_app.models import AuditEvent

    span = AuditEvent.objects.aggregate(first=Min("created_at"), last=Max("created_at"))
    middle = span["first"] + (span["last"] - span["first"]) / 2
    return (
        quote((middle - timedelta(days=3)).isoformat()),
        quote((middle + timedelta(days=4)).isoformat()),
        quote((span["first"] + timedelta(days=7)).isoformat()),
    )


def clients() -> dict[str, Any]:
    from django.contrib.auth.models import User
    from django.test import Client

    lead, created = User.objects.get_or_create(
        username="scale-lead", defaults={"is_superuser": True}
    )
    if created:
        lead.set_unusable_password()
        lead.save()
    out = {}
    for key, user in (("lead", lead), ("owner", User.objects.get(username="scale-owner-1"))):
        client = Client()
        client.force_login(user)
        out[key] = client
    return out


def get(client: Any, path: str, *, first_row_only: bool = False) -> int:
    """One request, its body read to the end (or to the first row); the status."""
    response = client.get(path)
    if response.status_code != 200:
        raise RuntimeError(f"GET {path}: HTTP {response.status_code}: {response.content[:300]!r}")
    if getattr(response, "streaming", False):
        chunks = iter(response.streaming_content)
        if first_row_only:
            next(chunks, b"")
        else:
            for _ in chunks:
                pass
        response.close()
    else:
        _ = response.content
    return int(response.status_code)


def queries_of(fn: Callable[[], object]) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        fn()
    return len(captured)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    rank = max(1, round(p / 100 * len(ordered) + 0.5))
    return ordered[min(rank, len(ordered)) - 1]


def measure(endpoint: Endpoint, client: Any, requests: int) -> tuple[list[float], int]:
    paths = endpoint.paths
    for i in range(WARMUP):
        get(client, paths[i % len(paths)], first_row_only=endpoint.first_row_only)
    queries = queries_of(lambda: get(client, paths[0], first_row_only=endpoint.first_row_only))
    times = []
    for i in range(max(requests, len(paths))):
        start = time.perf_counter()
        get(client, paths[i % len(paths)], first_row_only=endpoint.first_row_only)
        times.append(time.perf_counter() - start)
    return times, queries


def _proc_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def full_export() -> None:
    """The whole log once through daphne, as production serves it (ASGI): time to the
    first byte, rows per second, and the server's memory (the export streams)."""
    import httpx
    from django.contrib.auth.models import User
    from django.db import connection
    from rest_framework.authtoken.models import Token

    from sessions_app.models import AuditEvent

    rows = AuditEvent.objects.count()
    token, _ = Token.objects.get_or_create(user=User.objects.get(username="scale-lead"))
    connection.close()  # the server owns the database from here
    auth = {"Authorization": f"Token {token.key}"}
    with (
        tempfile.TemporaryDirectory(prefix="acode-bench-scale-") as tmp,
        web_server(Path(tmp) / "daphne.log") as server,
        httpx.Client(base_url=server.url, headers=auth, timeout=600) as http,
    ):
        http.get("/api/me/")  # the server's first request loads the registry
        idle = _proc_kb(server.proc.pid, "VmRSS")
        start, first, size = time.perf_counter(), 0.0, 0
        with http.stream("GET", "/api/audit/export/?format=jsonl") as response:
            response.raise_for_status()
            for chunk in response.iter_bytes():
                first = first or time.perf_counter() - start
                size += len(chunk)
        took = time.perf_counter() - start
        peak = _proc_kb(server.proc.pid, "VmHWM")
    print(
        f"info full export jsonl through daphne: {rows:,} rows, {size / 2**20:.0f} MB in "
        f"{took:.1f} s = {rows / took:,.0f} rows/s; first byte {fmt_time(first).strip()}; "
        f"server RSS {idle / 2**20:.0f} MB idle, {peak / 2**20:.0f} MB peak (streamed)"
    )
    record(
        "full audit export through daphne, jsonl",
        rows / took,
        "rows/s",
        note=f"{rows:,} rows, {size / 2**20:.0f} MB",
        higher_is_better=True,
    )
    record("full audit export through daphne: first byte", first * 1e3, "ms", target=TARGET * 1e3)
    record(
        "full audit export: daphne peak RSS",
        peak / 2**20,
        "MB",
        baseline=idle / 2**20,
        note=f"baseline: idle; the export is {size / 2**20:.0f} MB",
    )


def main() -> int:
    url, scale, note = bench_database(os.environ.get("ACODE_BENCH_SCALE"))
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("ACODE_LOG_LEVEL", "WARNING")
    requests = int(os.environ.get("ACODE_BENCH_SCALE_REQUESTS", "30"))
    from _setup import django_setup

    django_setup()
    import logging

    logging.disable(logging.INFO)
    from django.db import connection

    from sessions_app.models import AgentSession, AuditEvent, Job, JobEvent, RoleTransition

    print(f"database: {note}")
    ensure_data(scale)
    counts = {
        "sessions": AgentSession.objects.count(),
        "transitions": RoleTransition.objects.count(),
        "audit events": AuditEvent.objects.count(),
        "jobs": Job.objects.count(),
        "job events": JobEvent.objects.count(),
    }
    print("volumes: " + ", ".join(f"{v:,} {k}" for k, v in counts.items()))
    web = clients()
    sample = f"{connection.vendor}, scale {scale}: {counts['audit events']:,} audit events"
    results = []
    for endpoint in endpoints():
        times, queries = measure(endpoint, web[endpoint.user], requests)
        p50, p95 = statistics.median(times), percentile(times, 95)
        results.append(p95)
        print(
            f"{verdict(p95, TARGET)} {endpoint.label:<54} p50 {fmt_time(p50)}  p95 {fmt_time(p95)}"
            f"  target p95 {fmt_time(TARGET).strip()}  queries {queries:>2}  n={len(times)}"
        )
        record(
            f"{endpoint.label} p95",
            p95 * 1e3,
            "ms",
            target=TARGET * 1e3,
            note=f"p50 {p50 * 1e3:.1f} ms; {queries} queries; {sample}",
        )
    if os.environ.get("ACODE_BENCH_SCALE_FULL_EXPORT", "1") != "0":
        full_export()
    worst = max(results)
    print(
        f"{verdict(worst, TARGET)} worst p95 {fmt_time(worst).strip()} over {len(results)} endpoints ({connection.vendor}, scale {scale})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
