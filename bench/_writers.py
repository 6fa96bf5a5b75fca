"""Write throughput on 1, 2 and 4 processes: audited writes against bare INSERT + COMMIT.

Each process writes for a fixed time, audited writes each to a session of its own (the
audit chain is per session, so processes should not wait for each other), bare writes
as one-row INSERT + COMMIT into a scratch table. Processes are started with ``spawn`` and
set Django up themselves; they all start writing at the same moment.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass
from typing import Any

PROBE_TABLE = "acode_bench_write_probe"


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "acode.settings")
    import django

    django.setup()


def _audited(session_id: str, start_at: float, seconds: float, out: Any) -> None:
    _setup()
    from django.db import transaction

    from sessions_app.models import AgentSession, AuditEventType
    from sessions_app.services.audit import audit_record

    session = AgentSession.objects.get(pk=session_id)
    count = 0
    time.sleep(max(0.0, start_at - time.time()))
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with transaction.atomic():
            audit_record(
                event_type=AuditEventType.JOB_EVENT,
                actor="bench",
                session=session,
                target="bench/_writers.py",
                result="ok",
                details={"n": count},
            )
        count += 1
    out.put(count)


def _bare(start_at: float, seconds: float, out: Any) -> None:
    _setup()
    from django.db import connection, transaction

    count = 0
    time.sleep(max(0.0, start_at - time.time()))
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {PROBE_TABLE} (n) VALUES (%s)", [count])
        count += 1
    out.put(count)


@dataclass(frozen=True)
class Rates:
    processes: int
    audited: float  # writes per second, all processes together
    bare: float


def _run(target: Any, args_per_process: list[tuple[Any, ...]], seconds: float) -> float:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start_at = time.time() + 4.0  # time for every process to import Django
    procs = [
        ctx.Process(target=target, args=(*args, start_at, seconds, out))
        for args in args_per_process
    ]
    for proc in procs:
        proc.start()
    total = sum(out.get(timeout=120) for _ in procs)
    for proc in procs:
        proc.join(timeout=30)
    return total / seconds


def measure(
    session_ids: list[str], *, counts: tuple[int, ...] = (1, 2, 4), seconds: float = 3.0
) -> list[Rates]:
    """Audited and bare write rates for each process count, measured in turn."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {PROBE_TABLE} (n integer)")
    connection.close()
    try:
        results = []
        for n in counts:
            audited = _run(_audited, [(sid,) for sid in session_ids[:n]], seconds)
            bare = _run(_bare, [() for _ in range(n)], seconds)
            results.append(Rates(n, audited, bare))
        return results
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE {PROBE_TABLE}")
