"""Issue 34's rough edges, each as a person met it: a commit subject cut mid-word after a
full UUID, a raw template comment on the audit page, ReDoc asking a CDN for its badge,
a browser downloading /api/schema/ instead of showing it, ``<bool>`` after ``--version``
in ``--help``."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from acode.cli import app
from acode.text import headline


def test_a_headline_is_cut_between_words() -> None:
    request = "Create hello.py with greet(name) that says hello to the name it is given, politely"
    cut = headline(request)
    assert cut == "Create hello.py with greet(name) that says hello to the…"
    assert request[len(cut) - 1] == " "  # the word before the ellipsis is whole
    assert len(cut) <= 60 and headline("Short one\nsecond line") == "Short one"
    assert headline("x" * 80).endswith("…") and len(headline("x" * 80)) == 60


@pytest.mark.django_db
def test_the_audit_page_shows_no_template_comment(admin_client_logged_in: Any) -> None:
    html = admin_client_logged_in.get("/audit/").content.decode()
    assert "{#" not in html and "The last stored verification" not in html


@pytest.mark.django_db
def test_a_browser_sees_the_schema_as_text_and_clients_get_openapi(
    admin_client_logged_in: Any,
) -> None:
    shown = admin_client_logged_in.get("/api/schema/", HTTP_ACCEPT="text/html,*/*;q=0.8")
    assert shown.status_code == 200
    assert shown["Content-Type"] == "text/plain; charset=utf-8"
    assert shown["Content-Disposition"] == "inline"
    assert shown.content.decode().startswith("openapi:")
    fetched = admin_client_logged_in.get("/api/schema/")
    assert fetched["Content-Type"].startswith("application/vnd.oai.openapi")


@pytest.mark.django_db
def test_redoc_may_load_images_from_this_server_only(admin_client_logged_in: Any) -> None:
    response = admin_client_logged_in.get("/api/redoc/")
    policy = response["Content-Security-Policy"]
    assert "img-src 'self' data:" in policy and "default-src 'self'" in policy
    assert 'a[href*="redocly.com"] { display: none' in response.content.decode()


def test_help_prints_no_type_after_a_flag() -> None:
    shown = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "160", "NO_COLOR": "1"})
    assert shown.exit_code == 0
    version = next(line for line in shown.stdout.splitlines() if "--version" in line)
    assert "<bool>" not in shown.stdout and "Print the version" in version
    assert "<str>" in next(line for line in shown.stdout.splitlines() if "--url" in line)
