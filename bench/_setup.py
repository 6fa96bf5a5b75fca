"""Shared set-up for benchmark scripts: Django against the configured database, migrated."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "acode.settings")


def django_setup() -> None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", "--noinput", verbosity=0)


def per_call(fn: Callable[[], object], *, seconds: float = 0.5, min_calls: int = 1000) -> float:
    """Best-of-5 mean time of one call of ``fn``, in seconds."""
    calls = min_calls
    while True:  # size the batch so one batch takes about `seconds / 5`
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds / 5 or calls >= 50_000_000:
            break
        calls *= 4
    best = elapsed / calls
    for _ in range(4):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def fmt_time(seconds: float) -> str:
    if seconds < 1e-6:
        return f"{seconds * 1e9:8.1f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} µs"
    return f"{seconds * 1e3:8.2f} ms"


def verdict(value: float, target: float) -> str:
    return "OK  " if value <= target else "MISS"


@dataclass
class WebServer:
    """A running ASGI server process and where it listens."""

    proc: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def web_server(log: Path, *, server: str = "daphne", workers: int = 1) -> Iterator[WebServer]:
    """The web process as production runs it, on a free port of 127.0.0.1.

    ``daphne`` (one process, what ``make run`` starts) or ``uvicorn`` with ``workers``
    processes. It gets its own session, so Ctrl-C reaches only the benchmark, which then
    stops it; its output goes to ``log``.
    """
    from acode.embedded import free_port, stop_process, wait_for_port

    port = free_port()
    env = {
        **os.environ,
        "ACODE_DEBUG": "0",
        "ACODE_LOG_LEVEL": "WARNING",
        "ACODE_SERVE_STATIC": "0",
        "DJANGO_SETTINGS_MODULE": "acode.settings",
    }
    if server == "daphne":
        argv = [sys.executable, "-m", "daphne", "-v", "0", "-b", "127.0.0.1", "-p", str(port)]
        argv.append("acode.asgi:application")
    else:
        argv = [sys.executable, "-m", "uvicorn", "acode.asgi:application", "--host", "127.0.0.1"]
        argv += ["--port", str(port), "--workers", str(workers), "--no-access-log"]
        argv += ["--log-level", "warning", "--lifespan", "off"]
    with log.open("w") as out:
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            try:
                wait_for_port(port, timeout=30)
            except RuntimeError:
                print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
                raise
            yield WebServer(proc, port)
        finally:
            stop_process(proc)
