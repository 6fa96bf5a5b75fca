from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from acode.errors import ERROR_CODES, error_table_markdown

ROOT = Path(__file__).resolve().parent.parent.parent


def test_readme_error_table_is_current() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert error_table_markdown() in readme, "regenerate with: python -m acode.error_codes"


def test_spec_codes_are_documented() -> None:
    assert {"ACODE-ROL-001", "ACODE-ROL-002", "ACODE-ROL-003"} <= set(ERROR_CODES)


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_api_docs_load_only_local_static_files(client: Client, url: str) -> None:
    """Swagger UI and ReDoc come from static/ (drf-spectacular-sidecar): no CDN, so the
    docs work on an offline machine."""
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert not re.search(r"(?:src|href)=[\"']?(?:https?:)?//", html), "an external URL"
    assert not re.search(r"https?://(?!127\.0\.0\.1|localhost|testserver)", html)
    assets = re.findall(r"/static/([^\"'\s]+\.(?:js|css|png))", html)
    assert assets, "the page loads its scripts from /static/"
    for asset in assets:
        assert finders.find(asset), f"{asset} is not in any static directory"
