"""The API docs render in a real browser with the network closed: Swagger UI and ReDoc
come from static/ (drf-spectacular-sidecar), never from a CDN."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import pytest

from tests.browser.test_live_dashboard import log_in

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_swagger_ui_and_redoc_render_offline(
    live_server_url: str, browser: Any, django_user_model: Any
) -> None:
    django_user_model.objects.create_user("reader", "r@example.com", "pw-reader-123")
    context = browser.new_context()
    asked_elsewhere: list[str] = []
    server = urlparse(live_server_url).netloc

    def only_this_server(route: Any) -> None:
        if urlparse(route.request.url).netloc == server:
            route.continue_()
        else:  # the network is closed: anything else fails, as on an offline machine
            asked_elsewhere.append(f"{route.request.resource_type} {route.request.url}")
            route.abort()

    context.route("**/*", only_this_server)
    page = context.new_page()
    log_in(page, live_server_url, "reader", "pw-reader-123")
    page.goto(f"{live_server_url}/api/docs/")
    page.locator(".swagger-ui .opblock").first.wait_for(timeout=15000)
    assert page.locator(".swagger-ui .opblock").count() > 20
    assert page.get_by_text("/api/sessions/{id}/transition/").count() >= 1
    page.goto(f"{live_server_url}/api/redoc/")
    page.locator("redoc-wrapper, .redoc-wrap, [role=navigation]").first.wait_for(timeout=15000)
    page.get_by_text("Change the session's role").first.wait_for(timeout=15000)
    # ReDoc's "powered by" badge is an image on its maker's site: it stays blank offline.
    # Nothing the pages need (scripts, styles, fonts, the schema) comes from elsewhere.
    assert [r for r in asked_elsewhere if not r.startswith("image ")] == []
    context.close()
