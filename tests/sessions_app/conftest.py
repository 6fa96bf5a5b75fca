from __future__ import annotations

from typing import Any

import pytest

from acode import live


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(group, kind) of every message handed to the channel layer, in order."""
    out: list[tuple[str, str]] = []

    def record(sends: list[tuple[str, dict[str, Any]]]) -> None:
        out.extend((group, message["kind"]) for group, message in sends)

    monkeypatch.setattr(live, "send", record)
    return out
