"""Every dashboard page is behind the login, and the login page leads to the board."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", ["/", "/roles/", "/audit/", "/usage/", "/audit/chain/"])
def test_pages_need_a_login(client: Client, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_login_page_is_styled_and_logs_in(client: Client, user: User) -> None:
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert b"Log in to acode" in page.content
    assert b"/static/acode.css" in page.content
    response = client.post("/accounts/login/", {"username": "dev", "password": "pw-dev-123"})
    assert response.status_code == 302
    assert response["Location"] == "/"
