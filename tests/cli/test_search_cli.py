"""``acode search`` in the current session (issue 38), against a live server."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from sessions_app.models import AgentSession
from sessions_app.services.search_index import search_index_build
from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)

VALUE = f"clisecret{uuid.uuid4().hex}"


@pytest.fixture
def indexed(session_id: str, tmp_path: Path) -> Any:
    ws = Path(AgentSession.objects.get(pk=session_id).workspace)
    (ws / "src").mkdir()
    (ws / "src" / "retry.py").write_text(
        "def with_retries(call):\n    # retry the call with exponential backoff\n    return call()\n"
    )
    (ws / ".env").write_text(f"TOKEN={VALUE}\n# retry backoff\n")
    with override_settings(ACODE_INDEX_ROOT=tmp_path / "index"):
        search_index_build(ws)
        yield ws


def test_acode_search_prints_ranked_ranges_and_never_a_secret_file(
    cli: RunCli, indexed: Path
) -> None:
    result = cli("search", "retry with backoff", "--limit", "5")
    assert result.exit_code == 0, result.output
    assert "1. src/retry.py:1-" in result.stdout
    assert ".env" not in result.stdout and VALUE not in result.stdout
    data = json.loads(cli("search", "with_retries", "--kind", "definitions", "--json").stdout)
    assert [h["path"] for h in data["hits"]] == ["src/retry.py"]
    assert data["hits"][0]["kind"] == "definition"


def test_acode_search_globs_and_bad_globs(cli: RunCli, indexed: Path) -> None:
    none = cli("search", "retry", "--paths", "docs/**")
    assert none.exit_code == 0 and "No matches." in none.stdout
    refused = cli("search", "retry", "--paths", "../**")
    assert refused.exit_code != 0
    assert "ACODE-SRC-001" in refused.stderr
