"""Faults survived by real processes: a daphne server whose Redis is stopped and started
again, and whose PostgreSQL "restarts" under it, answers cleanly throughout and recovers
without being restarted itself.

The machine's PostgreSQL and Redis are shared with other test runs, so neither is touched:
the server gets a redis-server of its own (stopped and started on the same port), and
reaches PostgreSQL through a small TCP proxy that plays the restart.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from django.db import connection, transaction
from django.test import Client
from rest_framework.authtoken.models import Token
from websockets.exceptions import WebSocketException
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as ws_connect

from acode.embedded import free_port, stop_process, wait_for_port
from sessions_app.models import AgentSession, Job, JobStatus, RoleTransition
from tests.conftest import ROOT, RUN_ON_POSTGRES, shared_database_url

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

REDIS_SERVER = shutil.which("redis-server")
DAPHNE = [sys.executable, "-m", "daphne", "-b", "127.0.0.1"]


class OwnRedis:
    """A redis-server for one test, on a fixed port, that can be stopped and started again."""

    def __init__(self, workdir: Path) -> None:
        if REDIS_SERVER is None:
            pytest.skip("redis-server is not installed (apt-get install redis-server)")
        self.port = free_port()
        self.workdir = workdir
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        assert REDIS_SERVER is not None
        self.proc = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
        )
        wait_for_port(self.port)

    def kill(self) -> None:
        """Stop it the hard way (a crash): nothing is saved, every client is cut off."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None


class PgProxy:
    """A TCP proxy between the server under test and PostgreSQL, that can play a restart.

    A restart of PostgreSQL, as the app sees it: every open connection is closed under it
    (queries in flight fail, pooled connections are dead), new connections are refused
    for a while, then accepted again. :meth:`restart` does exactly that to the connections
    through this proxy, so the shared server other test runs use is never disturbed.
    """

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = free_port()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.listen()

    def listen(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        listener.settimeout(0.1)  # so the accept loop notices when it is closed
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            with self._lock:
                if self._listener is not listener:
                    return
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets |= {client, upstream}
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            self._close(source)
            self._close(target)

    def _close(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)
        with contextlib.suppress(OSError):
            # Linger 0: the close resets the connection instead of ending it politely.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)  # wakes the pump blocked reading it
        sock.close()

    def go_down(self) -> None:
        """Close every proxied connection abruptly and refuse new ones."""
        with self._lock:
            listener, self._listener = self._listener, None
            sockets = list(self._sockets)
        if listener is not None:
            listener.close()
        for sock in sockets:
            self._close(sock)

    def restart(self, down_seconds: float) -> None:
        self.go_down()
        time.sleep(down_seconds)
        self.listen()

    def close(self) -> None:
        self.go_down()


class Server:
    """daphne serving acode.asgi, with its output in a log file."""

    def __init__(self, log: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        full_env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "acode.settings",
            "ACODE_DEBUG": "0",
            "ACODE_SERVE_STATIC": "1",
            "ACODE_LOG_FORMAT": "json",
            "CELERY_TASK_ALWAYS_EAGER": "0",
            **env,
        }
        for name in ("DJANGO_ALLOW_ASYNC_UNSAFE", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
            full_env.pop(name, None)
        self._out = log.open("wb")
        self.proc = subprocess.Popen(
            [*DAPHNE, "-p", str(self.port), "acode.asgi:application"],
            cwd=ROOT,
            env=full_env,
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for_port(self.port, timeout=60)
        except RuntimeError:
            self.stop()
            raise RuntimeError("daphne did not start:\n" + log.read_text()) from None

    def stop(self) -> None:
        stop_process(self.proc)
        self._out.close()

    def log_records(self) -> list[dict[str, Any]]:
        records = []
        for line in self.log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict):
                    records.append(record)
        return records

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.1)


def assert_json_503(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 503, response.text[:500]
    assert response.headers["content-type"].startswith("application/json"), response.text[:500]
    body = response.json()
    assert body["code"] == "ACODE-API-503", body
    assert body["request_id"] == response.headers["X-Request-ID"]
    assert response.headers["Retry-After"].isdigit()
    return dict(body)


def assert_clean(response: httpx.Response) -> None:
    """What any answer must be while a service is away: right, or a clean 503."""
    if response.status_code == 200:
        return
    if response.url.path.startswith("/api/"):
        assert_json_503(response)
    else:
        assert response.status_code == 503, response.text[:500]
        assert "Service temporarily unavailable" in response.text


@pytest.fixture
def people(django_user_model: Any) -> dict[str, str]:
    """An admin's API token and dashboard session cookie (sessions live in the database)."""
    admin = django_user_model.objects.create_superuser("ops", "ops@example.com", "pw-ops-12345")
    browser = Client()
    browser.force_login(admin)
    return {
        "token": Token.objects.create(user=admin).key,
        "sessionid": browser.cookies["sessionid"].value,
    }


def api_client(server: Server, people: dict[str, str]) -> httpx.Client:
    return httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Token {people['token']}"},
        cookies={"sessionid": people["sessionid"]},
        timeout=60,
    )


def transition(api: httpx.Client, sid: str, to: str, reason: str) -> httpx.Response:
    return api.post(f"/api/sessions/{sid}/transition/", json={"to_role": to, "reason": reason})


def session_socket(server: Server, people: dict[str, str], sid: str) -> ClientConnection:
    return ws_connect(
        f"ws://127.0.0.1:{server.port}/ws/sessions/{sid}/",
        additional_headers={"Cookie": f"sessionid={people['sessionid']}", "Origin": server.url},
        open_timeout=30,
    )


def receive_until(sock: ClientConnection, needle: str, timeout: float) -> str:
    """The first message holding ``needle`` (fragments may come in several messages)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no websocket message with {needle!r} within {timeout:.0f}s")
        try:
            message = sock.recv(timeout=left)
        except TimeoutError:
            continue
        if needle in str(message):
            return str(message)


# --- Redis stopped, then started again -------------------------------------------------


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[OwnRedis]:
    workdir = tmp_path / "redis"
    workdir.mkdir()
    redis = OwnRedis(workdir)
    yield redis
    redis.stop()


@pytest.fixture
def redis_backed_server(redis_server: OwnRedis, tmp_path: Path) -> Iterator[Server]:
    server = Server(
        tmp_path / "daphne-redis.log",
        {"DATABASE_URL": shared_database_url(), "REDIS_URL": redis_server.url},
    )
    yield server
    server.stop()


def test_server_keeps_working_while_redis_is_down_and_pushes_again_after(
    redis_server: OwnRedis, redis_backed_server: Server, people: dict[str, str]
) -> None:
    server = redis_backed_server
    with api_client(server, people) as api:
        created = api.post("/api/sessions/", json={"title": "Outage", "task": "Survive it"})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        queued = api.post(f"/api/sessions/{sid}/jobs/", json={"request": "before the outage"})
        assert queued.status_code == 201, queued.text
        assert queued.json()["status"] == JobStatus.QUEUED
        # A page open before the outage: its socket works now.
        with session_socket(server, people, sid) as page:
            receive_until(page, "Outage", timeout=30)

        redis_server.kill()

        # Reads, the admin and the dashboard work without Redis.
        detail = api.get(f"/api/sessions/{sid}/")
        assert detail.status_code == 200, detail.text
        assert detail.json()["title"] == "Outage"
        admin = api.get("/admin/")
        assert admin.status_code == 200 and "Site administration" in admin.text
        page_html = api.get(f"/sessions/{sid}/")
        assert page_html.status_code == 200 and "Outage" in page_html.text
        # Logins too: the attempt counters live in Redis, and let attempts through.
        login = httpx.post(
            f"{server.url}/api/auth/token/",
            json={"username": "ops", "password": "pw-ops-12345"},
            timeout=60,
        )
        assert login.status_code == 200, login.text

        # A role change commits; only its live push is skipped, with a warning.
        changed = transition(api, sid, "planner", "planning while redis is down")
        assert changed.status_code == 200, changed.text
        assert changed.json()["changed"] is True
        assert RoleTransition.objects.filter(
            session_id=sid, reason="planning while redis is down"
        ).exists()
        assert AgentSession.objects.get(pk=sid).current_role.slug == "planner"
        skipped = wait_until(
            lambda: [
                r
                for r in server.log_records()
                if r.get("logger") == "acode.live"
                and r.get("level") == "warning"
                and "live push skipped" in str(r.get("message"))
            ],
            timeout=30,
            what="the skipped push's warning in the server log",
        )
        assert skipped

        # A new job cannot be queued: a clean 503, and nothing is left behind.
        refused = api.post(f"/api/sessions/{sid}/jobs/", json={"request": "during the outage"})
        assert_json_503(refused)
        assert not Job.objects.filter(session_id=sid, request="during the outage").exists()
        # A new page cannot subscribe without Redis: its socket is refused, the server lives.
        with (
            pytest.raises(WebSocketException),
            session_socket(server, people, sid) as refused_page,
        ):
            refused_page.recv(timeout=10)

        redis_server.start()

        # A page (re)connecting now is resynchronised from the database: it shows the role
        # change it missed, then gets live updates again.
        def open_page() -> ClientConnection | None:
            try:
                return session_socket(server, people, sid)
            except Exception:
                return None  # the server's Redis connections may still be reconnecting

        page = wait_until(open_page, timeout=30, what="a session socket after Redis is back")
        with page:
            receive_until(page, "planning while redis is down", timeout=30)
            live = transition(api, sid, "explorer", "exploring after redis is back")
            assert live.status_code == 200, live.text
            receive_until(page, "exploring after redis is back", timeout=30)

        queued_again = api.post(f"/api/sessions/{sid}/jobs/", json={"request": "after it"})
        assert queued_again.status_code == 201, queued_again.text
        assert queued_again.json()["status"] == JobStatus.QUEUED

    log = server.log_text()
    assert '"status_code": 500' not in log and "Internal Server Error" not in log, log[-3000:]


def test_a_page_left_open_through_a_redis_restart_gets_live_updates_after(
    redis_server: OwnRedis, redis_backed_server: Server, people: dict[str, str]
) -> None:
    server = redis_backed_server
    with api_client(server, people) as api:
        sid = api.post("/api/sessions/", json={"title": "Open", "task": "Stay"}).json()["id"]
        with session_socket(server, people, sid) as page:
            receive_until(page, "Open", timeout=30)
            redis_server.kill()
            assert transition(api, sid, "planner", "missed while down").status_code == 200
            time.sleep(2)  # the server's group reader notices Redis is gone
            redis_server.start()
            # The reader recovers and resynchronises the page with what it missed ...
            receive_until(page, "missed while down", timeout=30)
            with contextlib.suppress(TimeoutError):
                while True:  # let any further resynchronisation go by
                    page.recv(timeout=3)
            # ... but the group it listened to went away with Redis's data.
            assert transition(api, sid, "explorer", "live after it").status_code == 200
            receive_until(page, "live after it", timeout=10)


# --- PostgreSQL restarted --------------------------------------------------------------


def proxied_database_url(proxy: PgProxy) -> str:
    parts = urlsplit(shared_database_url())
    auth = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return urlunsplit(parts._replace(netloc=f"{auth}127.0.0.1:{proxy.port}"))


@pytest.fixture
def pg_proxy() -> Iterator[PgProxy]:
    if connection.vendor != "postgresql":
        pytest.skip(
            f"the restart is played through a proxy in front of PostgreSQL; {RUN_ON_POSTGRES}"
        )
    settings = connection.settings_dict
    proxy = PgProxy((settings.get("HOST") or "127.0.0.1", int(settings.get("PORT") or 5432)))
    yield proxy
    proxy.close()


@pytest.fixture(params=["pool", "persistent"])
def proxied_server(
    request: pytest.FixtureRequest, pg_proxy: PgProxy, tmp_path: Path
) -> Iterator[Server]:
    """The server through the proxy, with the connection pool (the default) or without it
    (persistent connections with health checks)."""
    env = {
        "DATABASE_URL": proxied_database_url(pg_proxy),
        "ACODE_DB_POOL": "1" if request.param == "pool" else "0",
        # Waiting for a connection while the database is away ends in a 503 this soon.
        "ACODE_DB_POOL_TIMEOUT": "3",
        "REDIS_URL": "",
    }
    server = Server(tmp_path / f"daphne-pg-{request.param}.log", env)
    yield server
    server.stop()


def waiting_on_lock() -> bool:
    """Whether another backend waits on a lock in the test database (asked inside the
    transaction that holds it: the statistics snapshot is cleared for each look)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        return bool(cursor.fetchone()[0])


def test_server_answers_503_while_postgresql_restarts_and_recovers_alone(
    pg_proxy: PgProxy, proxied_server: Server, people: dict[str, str]
) -> None:
    server = proxied_server
    with api_client(server, people) as api:
        created = api.post("/api/sessions/", json={"title": "Restart", "task": "Survive it"})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        assert api.get("/api/sessions/").status_code == 200

        # In flight: a role change waits on the session's row lock (held here) when every
        # database connection is cut.
        answers: list[httpx.Response | BaseException] = []
        reason = f"cut mid-flight {uuid.uuid4().hex[:6]}"

        def change_role() -> None:
            with api_client(server, people) as own:
                try:
                    answers.append(transition(own, sid, "planner", reason))
                except BaseException as exc:
                    answers.append(exc)

        with transaction.atomic():
            AgentSession.objects.select_for_update().get(pk=sid)
            inflight = threading.Thread(target=change_role)
            inflight.start()
            wait_until(waiting_on_lock, timeout=30, what="the role change to wait on the lock")
            pg_proxy.go_down()
            inflight.join(timeout=60)
        assert len(answers) == 1 and isinstance(answers[0], httpx.Response), answers
        assert_json_503(answers[0])
        assert not RoleTransition.objects.filter(session_id=sid, reason=reason).exists()
        assert AgentSession.objects.get(pk=sid).current_role.slug == "default"

        # While connections are refused: clean 503s, JSON under /api/, a plain page elsewhere.
        down_api = api.get("/api/sessions/")
        assert_json_503(down_api)
        down_page = api.get(f"/sessions/{sid}/")
        assert down_page.status_code == 503 and "Service temporarily unavailable" in down_page.text
        assert down_page.headers["Retry-After"].isdigit()

        # Back: later requests succeed, the server reconnects by itself.
        pg_proxy.listen()
        seen: list[httpx.Response] = []

        def reads_again() -> bool:
            response = api.get(f"/api/sessions/{sid}/")
            seen.append(response)
            return response.status_code == 200

        wait_until(reads_again, timeout=60, what="reads to succeed after the restart")
        for response in seen:
            assert_clean(response)
        changed = transition(api, sid, "planner", "after the restart")
        assert changed.status_code == 200, changed.text
        assert RoleTransition.objects.filter(session_id=sid, reason="after the restart").exists()
        for path in ("/admin/", f"/sessions/{sid}/", "/api/sessions/"):
            response = api.get(path)
            assert response.status_code == 200, (path, response.text[:500])

        # A quick restart under a steady stream of requests: every answer is right or a
        # clean 503, none a 500, and the stream goes on after.
        stop = threading.Event()
        stream: list[httpx.Response] = []

        def keep_asking() -> None:
            with api_client(server, people) as other:
                while not stop.is_set():
                    for path in ("/api/sessions/", f"/sessions/{sid}/"):
                        stream.append(other.get(path))

        asker = threading.Thread(target=keep_asking)
        asker.start()
        try:
            wait_until(lambda: len(stream) >= 5, timeout=30, what="the stream to start")
            pg_proxy.restart(down_seconds=1.0)
            count = len(stream)
            wait_until(
                lambda: any(r.status_code == 200 for r in stream[count:]),
                timeout=60,
                what="the stream to succeed after the restart",
            )
        finally:
            stop.set()
            asker.join(timeout=60)
        for response in stream:
            assert_clean(response)
