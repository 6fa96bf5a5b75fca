"""A real server for browser tests: daphne on a free port, against the test database, with
a Redis channel layer shared with the test process (writes made here reach its sockets).

Chromium is Debian's (/usr/bin/chromium); Playwright never downloads a browser.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from acode.embedded import embedded_redis, free_port, stop_process, wait_for_port
from tests.conftest import ROOT, shared_database_url

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = ROOT / "test-artifacts"
APP = ["acode.asgi:application"]


@pytest.fixture
def redis_url(settings: Any) -> Iterator[str]:
    """REDIS_URL when set (the test process's channel layer already uses it), else a
    throwaway Redis that this process's channel layer is pointed at for the test."""
    url = os.environ.get("REDIS_URL")
    if url:
        yield url
        return
    with embedded_redis() as url:
        settings.CHANNEL_LAYERS = {
            "default": {
                "BACKEND": "channels_redis.core.RedisChannelLayer",
                "CONFIG": {"hosts": [url], "prefix": "acode"},
            }
        }
        yield url


@pytest.fixture
def live_server_url(transactional_db: None, redis_url: str, tmp_path: Path) -> Iterator[str]:
    """daphne serving acode.asgi against this test run's database and ``redis_url``."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": shared_database_url(),
        "REDIS_URL": redis_url,
        "DJANGO_SETTINGS_MODULE": "acode.settings",
        "ACODE_DEBUG": "0",
        "ACODE_SERVE_STATIC": "1",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    log_path = tmp_path / "daphne.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), *APP],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for_port(port, timeout=30)
            yield f"http://127.0.0.1:{port}"
        finally:
            stop_process(proc)
    if ARTIFACTS.is_dir():
        shutil.copy(log_path, ARTIFACTS / "daphne.log")


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Headless Debian Chromium through Playwright's sync API."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    monkeypatch.setenv("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    # Playwright's sync API keeps an event loop on this thread; the ORM calls the test
    # makes between browser steps are still plain synchronous code.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield instance
        finally:
            instance.close()
            # While Playwright's loop runs on this thread, Django counts the thread as async
            # and opens a separate connection for it: close that one too.
            connections.close_all()
