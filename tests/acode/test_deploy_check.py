"""Production settings: `manage.py check --deploy` is clean, missing essentials stop the
process with the variable's name, and the site answers over HTTPS only."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import shared_database_url

ROOT = Path(__file__).resolve().parent.parent.parent


# manage.py and the site run in processes of their own, against this run's database.
pytestmark = pytest.mark.reaches_services


def production_env(tmp_path: Path, **overrides: str | None) -> dict[str, str]:
    """The process environment of a production deployment (no acode variable inherited)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACODE_", "CELERY_"))}
    env.update(
        {
            "ACODE_ENV": "production",
            "ACODE_SECRET_KEY": secrets.token_urlsafe(50),
            "ACODE_ALLOWED_HOSTS": "acode.example.com",
            "ACODE_CSRF_TRUSTED_ORIGINS": "https://acode.example.com",
            "ACODE_VAR_DIR": str(tmp_path / "var"),
            "REDIS_URL": os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0",
            "DJANGO_SETTINGS_MODULE": "acode.settings",
        }
    )
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_deploy_check_is_clean_in_production(tmp_path: Path) -> None:
    result = manage(production_env(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues" in output
    assert "WARNINGS:" not in output


def test_development_defaults_are_not_production_ones(tmp_path: Path) -> None:
    """Without ACODE_ENV the embedded defaults stay (plain HTTP for `make run`), and the
    deploy check says what production would need."""
    env = production_env(tmp_path, ACODE_ENV=None, ACODE_SECRET_KEY=None)
    result = manage(env, "check", "--deploy", "--fail-level", "WARNING")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in output


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"ACODE_SECRET_KEY": None}, "ACODE_SECRET_KEY"),
        ({"ACODE_SECRET_KEY": ""}, "ACODE_SECRET_KEY"),
        ({"ACODE_ALLOWED_HOSTS": None}, "ACODE_ALLOWED_HOSTS"),
        ({"REDIS_URL": None}, "REDIS_URL"),
        ({"ACODE_DEBUG": "1"}, "ACODE_DEBUG"),
        ({"ACODE_ENV": "prod"}, "ACODE_ENV"),
        ({"ACODE_LOGIN_RATE": "lots"}, "ACODE_LOGIN_RATE"),
    ],
)
def test_production_without_an_essential_fails_naming_it(
    tmp_path: Path, overrides: dict[str, str | None], named: str
) -> None:
    result = manage(production_env(tmp_path, **overrides), "check")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert named in result.stderr.strip().splitlines()[-1]


PROBE = """
import json
import django
django.setup()
from django.test import Client

client = Client(HTTP_HOST="acode.example.com")
plain = client.get("/accounts/login/")
secure = client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https")
probe = client.get("/healthz")
other_host = Client(HTTP_HOST="evil.example.net").get("/healthz")
cookie = secure.cookies["csrftoken"]
print(json.dumps({
    "plain": [plain.status_code, plain.get("Location")],
    "secure": secure.status_code,
    "hsts": secure.get("Strict-Transport-Security"),
    "frame": secure.get("X-Frame-Options"),
    "nosniff": secure.get("X-Content-Type-Options"),
    "cookie_secure": bool(cookie["secure"]),
    "cookie_samesite": cookie["samesite"],
    "probe": probe.status_code,
    "other_host": other_host.status_code,
}))
"""


@pytest.mark.django_db
def test_production_site_answers_over_https_only(tmp_path: Path) -> None:
    """Behind the proxy: plain HTTP is redirected (probes excepted), HTTPS answers carry
    HSTS and the security headers, and cookies are secure."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=production_env(tmp_path, DATABASE_URL=shared_database_url()),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["plain"] == [301, "https://acode.example.com/accounts/login/"]
    assert seen["secure"] == 200
    assert seen["hsts"] == "max-age=31536000; includeSubDomains; preload"
    assert seen["frame"] == "DENY"
    assert seen["nosniff"] == "nosniff"
    assert seen["cookie_secure"] is True
    assert seen["cookie_samesite"] == "Lax"
    assert seen["probe"] == 200  # a load balancer's plain-HTTP liveness probe
    assert seen["other_host"] == 400  # not in ACODE_ALLOWED_HOSTS
