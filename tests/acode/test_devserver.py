"""``make run`` (``acode.devserver``): the login and the dashboard's URL once every service
is up, below Celery's banner; Ctrl-C stops the services one by one, the worker before the
Redis it talks to, with no worker error."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acode.devserver import (
    AdminLogin,
    Service,
    ready_banner,
    spawn,
    stop_services,
    supervise,
)
from acode.embedded import free_port
from tests.conftest import ROOT, shared_database_url

# A service that says when it is up, and when SIGTERM starts and ends its shutdown.
RECORDER = """
import signal, sys, time
name, log, linger = sys.argv[1], sys.argv[2], float(sys.argv[3])
def note(text):
    with open(log, "a") as f:
        f.write(f"{name} {text}\\n")
def stop(signum, frame):
    note("stopping")
    time.sleep(linger)
    note("stopped")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
note("up")
while True:
    time.sleep(0.05)
"""


@pytest.fixture
def recorders(tmp_path: Path) -> Iterator[Callable[[str], subprocess.Popen[Any]]]:
    log = tmp_path / "services.log"
    started: list[subprocess.Popen[Any]] = []

    def start(name: str) -> subprocess.Popen[Any]:
        proc = spawn([sys.executable, "-c", RECORDER, name, str(log), "0.3"], dict(os.environ))
        started.append(proc)
        deadline = time.monotonic() + 10
        while f"{name} up" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline, f"{name} did not start"
            time.sleep(0.05)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def log_lines(tmp_path: Path) -> list[str]:
    return [
        line for line in (tmp_path / "services.log").read_text().splitlines() if "up" not in line
    ]


def test_services_stop_one_by_one_in_the_reverse_order_of_their_start(
    recorders: Callable[[str], subprocess.Popen[Any]], tmp_path: Path
) -> None:
    services = [Service(name, recorders(name)) for name in ("model", "worker", "web")]
    stop_services(services)
    assert log_lines(tmp_path) == [
        "web stopping",
        "web stopped",
        "worker stopping",
        "worker stopped",
        "model stopping",
        "model stopped",
    ]
    assert all(s.proc.returncode == 0 for s in services)


def test_a_service_that_does_not_stop_in_time_is_killed(
    recorders: Callable[[str], subprocess.Popen[Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    stubborn = Service("worker", recorders("worker"), stop_seconds=0.05)
    stop_services([stubborn])
    assert stubborn.proc.returncode == -signal.SIGKILL
    assert "the worker did not stop in time; killing it" in capsys.readouterr().out


class ClosedTerminal:
    def write(self, text: str) -> int:
        raise BrokenPipeError("the reader went away")

    def flush(self) -> None:
        raise BrokenPipeError("the reader went away")


def test_services_are_stopped_even_when_nobody_can_read_the_output(
    recorders: Callable[[str], subprocess.Popen[Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `make run | tee log` and Ctrl-C: tee goes first, every later line fails to print.
    services = [Service(name, recorders(name)) for name in ("worker", "web")]
    monkeypatch.setattr(sys, "stdout", ClosedTerminal())
    stop_services(services)
    assert log_lines(tmp_path) == [
        "web stopping",
        "web stopped",
        "worker stopping",
        "worker stopped",
    ]


def test_ctrl_c_at_the_terminal_reaches_only_the_supervisor(
    recorders: Callable[[str], subprocess.Popen[Any]],
) -> None:
    # A terminal signals its foreground process group; each service has a group of its own.
    proc = recorders("worker")
    assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)


def counting(limit: int) -> Callable[[], bool]:
    """True from the ``limit``-th call on."""
    calls = [0]

    def check() -> bool:
        calls[0] += 1
        return calls[0] >= limit

    return check


def test_the_banner_is_printed_once_when_every_service_is_up(
    recorders: Callable[[str], subprocess.Popen[Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    worker_ready = counting(3)
    services = [
        Service("worker", recorders("worker"), worker_ready),
        Service("web", recorders("web")),
    ]
    supervise(services, banner="BANNER", stop_asked=counting(10), poll_seconds=0)
    assert capsys.readouterr().out.count("BANNER") == 1
    # Nobody is asked again once up.
    assert services[0].up and worker_ready() and services[1].up


def test_no_banner_while_a_service_is_still_starting(
    recorders: Callable[[str], subprocess.Popen[Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    services = [Service("worker", recorders("worker"), lambda: False)]
    supervise(services, banner="BANNER", stop_asked=counting(5), poll_seconds=0)
    assert "BANNER" not in capsys.readouterr().out


def test_a_service_that_dies_ends_the_wait(capsys: pytest.CaptureFixture[str]) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    dead.wait()
    supervise([Service("worker", dead)], banner="BANNER", stop_asked=lambda: False)
    assert "the worker exited with 3; stopping" in capsys.readouterr().out


def test_the_banner_gives_the_url_and_the_login() -> None:
    url = "http://127.0.0.1:8000/"
    created = ready_banner(url=url, admin=AdminLogin("admin", "s3cret-Pw"))
    assert "acode is up: http://127.0.0.1:8000/" in created
    assert "Log in as 'admin' with password: s3cret-Pw" in created
    assert "Admin: http://127.0.0.1:8000/admin/" in created
    known = ready_banner(url=url, admin=AdminLogin("boss"))
    assert "Log in as 'boss' (its password was shown when it was created)" in known
    assert "manage.py changepassword boss" in known


# -- the real thing -------------------------------------------------------------------
WORKER_ERRORS = ("could not remove worker", "Connection refused", "Error 111", "Traceback")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_make_run_shows_the_login_last_and_stops_the_worker_before_redis(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": shared_database_url(),
        "DJANGO_SETTINGS_MODULE": "acode.settings",
        "ACODE_PORT": str(port),
        "ACODE_VAR_DIR": str(tmp_path),
        # No model server: the test is about the processes make run supervises.
        "ACODE_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "ACODE_BACKLOG_TICK_SECONDS": "1",  # beat's busiest routine task, every second
    }
    env.pop("REDIS_URL", None)  # the embedded Redis, stopped last
    # In a process group of its own, as a terminal's foreground job is.
    proc = subprocess.Popen(
        [sys.executable, "-m", "acode.devserver"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        process_group=0,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 180
        while not any("acode is up" in line for line in lines):
            assert proc.poll() is None, "".join(lines)
            assert time.monotonic() < deadline, "".join(lines)
            time.sleep(0.2)
        time.sleep(3)  # whatever the services print next (and a few of beat's ticks)
        # Ctrl-C: the terminal signals the whole foreground process group.
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=90) == 0, "".join(lines)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reader.join(timeout=10)
    out = "".join(lines)

    def at(text: str) -> int:
        assert text in out, out
        return out.index(text)

    # The login and the URL come after Celery's banner, once everything answers.
    assert at("[queues]") < at("acode is up: http://127.0.0.1:") < at("Ctrl-C stops everything.")
    banner = out[at("acode is up") :]
    assert f"http://127.0.0.1:{port}/" in banner
    assert "Log in as 'admin' with password: " in banner
    assert (
        at("stopping the web server")
        < at("stopping the worker")
        < at("stopped every process it started")
        < at("stopping the embedded Redis")
    )
    for error in WORKER_ERRORS:
        assert error not in out, out
    # Beat's routine tasks (sent, received, succeeded every tick) do not bury the login.
    routine = [line for line in out.splitlines()
               if "acode.backlog_schedule[" in line or "(acode.backlog_schedule)" in line]  # fmt: skip
    assert not routine, out
