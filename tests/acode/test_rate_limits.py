"""Login rate limits: the API token, the dashboard login and the admin login count every
attempt per client address and per username, refuse the excess with 429 and Retry-After,
and share their counters across processes through Redis."""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from acode.ratelimit import reset_login_limits
from tests.conftest import spawn_python

pytestmark = pytest.mark.django_db

TOKEN_URL = "/api/auth/token/"
LOGIN_URL = "/accounts/login/"
ADMIN_LOGIN_URL = "/admin/login/"


@pytest.fixture(autouse=True)
def _three_a_minute(settings: Any) -> None:
    # Small limits keep the tests quick (every attempt hashes a password). Hourly windows:
    # the counters are fixed windows, and a test straddling a minute's end on a slow
    # machine would start counting afresh halfway.
    settings.ACODE_LOGIN_RATE = "3/h"
    settings.ACODE_LOGIN_IP_RATE = "5/h"
    reset_login_limits()


def token_login(username: str, password: str, address: str = "10.0.0.1") -> Any:
    return APIClient().post(
        TOKEN_URL,
        {"username": username, "password": password},
        format="json",
        REMOTE_ADDR=address,
    )


def assert_limited(response: Any) -> int:
    assert response.status_code == 429
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= 3600
    return retry_after


def test_token_endpoint_refuses_guesses_past_the_username_limit(user: User) -> None:
    for address in ("10.0.0.1", "10.0.0.2", "10.0.0.3"):  # spread over addresses
        assert token_login("dev", "wrong", address).status_code == 401
    refused = token_login("dev", "pw-dev-123", "10.0.0.4")  # even the right password
    assert_limited(refused)
    body = refused.json()
    assert body["code"] == "ACODE-API-429"
    assert "Too many login attempts" in body["message"]
    assert body["request_id"]
    assert not Token.objects.filter(user=user).exists()
    # Another user is not locked out by someone guessing dev's password.
    User.objects.create_user("ann", password="pw-ann-123")
    assert token_login("ann", "pw-ann-123", "10.0.0.9").status_code == 200


def test_token_endpoint_refuses_an_address_spreading_guesses_over_usernames(
    user: User,
) -> None:
    for name in ("a", "b", "c", "d", "e"):
        assert token_login(name, "wrong").status_code == 401
    assert_limited(token_login("dev", "pw-dev-123"))  # dev's own budget is untouched
    assert token_login("dev", "pw-dev-123", "10.0.0.2").status_code == 200


def test_malformed_attempts_count_against_the_address() -> None:
    client = APIClient()
    for _ in range(5):
        response = client.post(TOKEN_URL, {"password": "x"}, format="json", REMOTE_ADDR="10.1.1.1")
        assert response.status_code == 400
    assert_limited(client.post(TOKEN_URL, {"password": "x"}, format="json", REMOTE_ADDR="10.1.1.1"))


def test_ipv6_clients_are_counted_by_their_network(user: User) -> None:
    for host in range(1, 6):
        assert token_login(f"u{host}", "wrong", f"2001:db8::{host}").status_code == 401
    assert_limited(token_login("dev", "pw-dev-123", "2001:db8::ff"))


def test_usernames_are_counted_without_case_or_spaces(user: User) -> None:
    for name in ("dev", "DEV", " Dev "):
        token_login(name, "wrong", "10.0.0.7")
    assert_limited(token_login("dEv", "pw-dev-123", "10.0.0.8"))


def test_dashboard_login_page_says_to_wait(user: User) -> None:
    client = Client(REMOTE_ADDR="10.2.0.1")
    for _ in range(3):
        page = client.post(LOGIN_URL, {"username": "dev", "password": "wrong"})
        assert page.status_code == 200
        assert b"did not match" in page.content
    page = client.post(LOGIN_URL, {"username": "dev", "password": "pw-dev-123"})
    retry_after = assert_limited(page)
    text = page.content.decode()
    assert "Too many login attempts" in text
    assert f"Wait {retry_after} second" in text
    assert "did not match" not in text
    assert '<form method="post"' in text  # the form is still there for later
    assert "_auth_user_id" not in client.session


def test_dashboard_and_api_share_one_limit(user: User) -> None:
    for _ in range(3):
        Client(REMOTE_ADDR="10.3.0.1").post(LOGIN_URL, {"username": "dev", "password": "no"})
    assert_limited(token_login("dev", "pw-dev-123", "10.3.0.2"))


def test_admin_login_is_limited_too(admin_user: User) -> None:
    client = Client(REMOTE_ADDR="10.4.0.1")
    for _ in range(3):
        page = client.post(ADMIN_LOGIN_URL, {"username": "boss", "password": "wrong"})
        assert page.status_code == 200
    page = client.post(ADMIN_LOGIN_URL, {"username": "boss", "password": "pw-boss-123"})
    assert_limited(page)
    assert "Too many login attempts" in page.content.decode()
    assert "_auth_user_id" not in client.session
    # Within the limit the admin login works as before.
    ok = Client(REMOTE_ADDR="10.4.0.2")
    User.objects.create_superuser("root2", "r@example.com", "pw-root-123")
    response = ok.post(ADMIN_LOGIN_URL, {"username": "root2", "password": "pw-root-123"})
    assert response.status_code == 302
    assert "_auth_user_id" in ok.session


def test_reset_forgets_the_attempts(user: User) -> None:
    for _ in range(3):
        token_login("dev", "wrong")
    assert_limited(token_login("dev", "pw-dev-123"))
    reset_login_limits()
    assert token_login("dev", "pw-dev-123").status_code == 200


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="counters are shared through Redis")
def test_counters_are_shared_between_processes(user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attempts another web process counted limit this one (the Redis cache)."""
    assert django_settings.CACHES["ratelimit"]["BACKEND"].endswith("RedisCache")
    monkeypatch.setenv("ACODE_LOGIN_RATE", "3/h")
    monkeypatch.setenv("ACODE_LOGIN_IP_RATE", "5/h")
    other = spawn_python(
        "from django.test import Client\n"
        "for _ in range(3):\n"
        "    r = Client(REMOTE_ADDR='10.5.0.1').post('/accounts/login/', "
        "{'username': 'dev', 'password': 'wrong'})\n"
        "    print(r.status_code)\n"
    )
    out, err = other.communicate(timeout=120)
    assert other.returncode == 0, err
    assert out.split() == ["200", "200", "200"]
    assert_limited(token_login("dev", "pw-dev-123", "10.5.0.2"))
