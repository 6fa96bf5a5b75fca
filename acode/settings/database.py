"""Database: ``DATABASE_URL``, SQLite under ``var/`` by default."""

from __future__ import annotations

import dj_database_url

from acode.settings.base import VAR_DIR
from acode.settings.env import env_bool, env_float, env_int, env_str

_default_url = f"sqlite:///{VAR_DIR / 'acode.sqlite3'}"
DATABASE_URL = env_str("DATABASE_URL", _default_url)

DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL, conn_max_age=env_int("ACODE_DB_CONN_MAX_AGE", 60), conn_health_checks=True
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool(
    "ACODE_DB_POOL", True
):
    # A connection pool: under ASGI every request runs in its own thread, so persistent
    # connections would be opened and closed per request. With CONN_HEALTH_CHECKS the pool
    # checks a connection before handing it out, so after a database restart dead ones are
    # replaced instead of failing a request each; while the database is away a request
    # waits ACODE_DB_POOL_TIMEOUT seconds for a connection, then gets a 503 (acode.middleware).
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": env_int("ACODE_DB_POOL_MAX", 20),
        "timeout": env_float("ACODE_DB_POOL_TIMEOUT", 30.0),
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    # WAL + a busy timeout let the web server, workers and tests share one file;
    # the test database is a file so other processes can open it too.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-acode.sqlite3")}
