"""CSRF: every dashboard POST (found from the URL patterns, so new ones are covered) is
refused without the token and accepted with the one the page gives htmx; every POST form
carries the token; session-authenticated API writes need it too; no plain Django view is
exempt."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rest_framework.views import APIView

from sessions_app.dashboard import urls as dashboard_urls
from sessions_app.models import AgentSession
from sessions_app.services.sessions import session_create

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent.parent
# Outside the dashboard's own URLs, the pages with forms of their own.
AUTH_POSTS = ["/accounts/login/", "/accounts/logout/"]
_PARAM = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")


def _walk(patterns: list[Any], prefix: str) -> Iterator[tuple[str, URLPattern]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry


def _fill(route: str, session: AgentSession) -> str:
    """A concrete URL for a route: real ids where the route names a session."""

    def value(match: re.Match[str]) -> str:
        converter = match["converter"] or "str"
        if converter == "uuid":
            return str(session.id)
        if converter == "int":
            return "1"
        return "default" if converter in {"slug", "str"} else "x"

    if route.startswith("^"):  # a regex route: not used by the dashboard today
        pytest.fail(f"cannot build a URL for the regex route {route}")
    return "/" + _PARAM.sub(value, route)


def dashboard_urls_to_post(session: AgentSession) -> list[str]:
    """Every dashboard URL, filled in; the mount point is where the board's route lives."""
    prefix = get_resolver().reverse("dashboard-board").lstrip("/")
    return [_fill(prefix + route, session) for route, _ in _walk(dashboard_urls.urlpatterns, "")]


@pytest.fixture
def lead(django_user_model: Any) -> User:
    return django_user_model.objects.create_superuser("lead", "lead@example.com", "pw-lead-123")


@pytest.fixture
def session(lead: User) -> AgentSession:
    return session_create(owner=lead, title="CSRF check", task="nothing")


@pytest.fixture
def browser(lead: User) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(lead)
    return client


def htmx_token(client: Client) -> str:
    """The token the base template hands htmx (hx-headers on <body>)."""
    page = client.get("/")
    assert page.status_code == 200
    found = re.search(
        r"<body[^>]*hx-headers='\{\"X-CSRFToken\": \"(\w+)\"\}'", page.content.decode()
    )
    assert found, "the base template gives htmx the CSRF token"
    return found[1]


def is_csrf_refusal(response: Any) -> bool:
    return response.status_code == 403 and b"CSRF" in response.content


def test_every_dashboard_post_needs_the_token(browser: Client, session: AgentSession) -> None:
    urls = dashboard_urls_to_post(session) + AUTH_POSTS
    token = htmx_token(browser)
    accepting_posts = []
    for url in urls:
        refused = browser.post(url, {})
        assert is_csrf_refusal(refused), f"POST {url} without a token: {refused.status_code}"
        with_token = browser.post(url, {}, HTTP_X_CSRFTOKEN=token)
        assert not is_csrf_refusal(with_token), f"POST {url} with the htmx token was refused"
        if with_token.status_code != 405:
            accepting_posts.append(url)
        if url == "/accounts/logout/":
            browser.force_login(User.objects.get(username="lead"))
    # The discovery found the dashboard's own POST views (the role change form at least).
    assert f"/sessions/{session.id}/transition/" in accepting_posts


def test_a_post_form_submits_with_its_own_token(browser: Client, session: AgentSession) -> None:
    page = browser.get(f"/sessions/{session.id}/").content.decode()
    form = re.search(r'<form method="post" action="([^"]+/transition/)".*?</form>', page, re.S)
    assert form, "the session page has its role change form"
    token = re.search(r'name="csrfmiddlewaretoken" value="(\w+)"', form[0])
    assert token
    response = browser.post(form[1], {"csrfmiddlewaretoken": token[1], "to_role": ""})
    assert response.status_code == 302  # handled: back to the session page with a message


def test_rendered_post_forms_carry_the_token(browser: Client, session: AgentSession) -> None:
    pages = [url for url in dashboard_urls_to_post(session) if browser.get(url).status_code == 200]
    assert pages
    for url in pages:
        html = browser.get(url).content.decode()
        for form in re.findall(r"<form\b[^>]*>.*?</form>", html, re.S | re.I):
            if re.search(r"method=[\"']?post", form, re.I):
                assert 'name="csrfmiddlewaretoken"' in form, f"a POST form on {url} lacks it"


def test_every_post_form_in_the_templates_has_csrf_token() -> None:
    templates = sorted((ROOT / "templates").rglob("*.html"))
    assert templates
    for path in templates:
        text = path.read_text(encoding="utf-8")
        for form in re.findall(r"<form\b[^>]*>.*?</form>", text, re.S | re.I):
            opening = form[: form.index(">") + 1]
            if re.search(r"method=[\"']?post", opening, re.I):
                assert "{% csrf_token %}" in form, f"{path.relative_to(ROOT)}: {opening}"


def test_htmx_requests_send_the_token_from_every_page(browser: Client) -> None:
    """hx-post and friends, wherever a page uses them, inherit hx-headers from <body>."""
    base = (ROOT / "templates" / "base.html").read_text(encoding="utf-8")
    assert 'hx-headers=\'{"X-CSRFToken": "{{ csrf_token }}"}\'' in base
    assert htmx_token(browser)


def test_session_authenticated_api_writes_need_the_token(lead: User) -> None:
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(lead)
    refused = client.post("/api/sessions/", {"title": "No token"}, format="json")
    assert refused.status_code == 403
    assert refused.json()["code"] == "ACODE-API-403"
    assert "CSRF" in refused.json()["message"]
    accepted = client.post(
        "/api/sessions/",
        {"title": "With token"},
        format="json",
        HTTP_X_CSRFTOKEN=htmx_token(client),
    )
    assert accepted.status_code == 201, accepted.content


def test_token_authenticated_api_writes_need_no_csrf(lead: User) -> None:
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=lead).key}")
    response = client.post("/api/sessions/", {"title": "Token auth"}, format="json")
    assert response.status_code == 201, response.content


def test_only_drf_views_are_csrf_exempt() -> None:
    """DRF views are exempt at Django's level and enforce CSRF themselves for cookie
    sessions (above); no other view may skip the check."""
    exempt = []
    for route, pattern in _walk(get_resolver().url_patterns, "/"):
        view = pattern.callback
        if not getattr(view, "csrf_exempt", False):
            continue
        view_class = getattr(view, "cls", None)
        if isinstance(view_class, type) and issubclass(view_class, APIView):
            continue
        exempt.append(route)
    assert exempt == []
