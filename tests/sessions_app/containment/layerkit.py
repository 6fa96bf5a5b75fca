"""Pieces for calling the layer code without a session: a journal that keeps what it was
given, and generous limits."""

from __future__ import annotations

from typing import Any

from sessions_app.containment import LayerLimits, RecordedWrite

LIMITS = LayerLimits(1 << 30, 200_000)


class RecordingJournal:
    """An ``ApplyJournal`` that keeps each command's writes and plan (``ended``: how many
    applies finished)."""

    def __init__(self) -> None:
        self.writes: list[RecordedWrite] = []
        self.plans: list[dict[str, Any]] = []
        self.ended = 0

    def begin(self, writes: list[RecordedWrite], plan: dict[str, Any]) -> None:
        self.writes += writes
        self.plans.append(plan)

    def end(self) -> None:
        self.ended += 1
