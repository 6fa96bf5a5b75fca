"""Fixtures of the containment suite: the secret in the environment, the attack area."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.sessions_app.agent.containment.kit import (
    SECRET,
    Area,
    fingerprint,
)


@pytest.fixture(autouse=True)
def _secret_and_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACODE_SANDBOX", raising=False)
    monkeypatch.setenv("ACODE_TEST_SECRET", SECRET)


@pytest.fixture
def area(tmp_path: Path) -> Area:
    ws = tmp_path / "ws"
    files = {
        "src/app.py": "x = 1\n",
        "src/util/helpers.py": "def helper():\n    return 1\n",
        "docs/guide.md": "# Guide\n",
        "README.md": "# Project\n",
        "tests/test_app.py": "def test_ok():\n    assert True\n",
    }
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    sentinel = tmp_path / "sentinel"
    (sentinel / "sub").mkdir(parents=True)
    (sentinel / "keep.txt").write_text("outside, do not touch\n")
    (sentinel / "sub" / "f.md").write_text("outside-secret-content\n")
    return Area(ws, sentinel, fingerprint(sentinel))
