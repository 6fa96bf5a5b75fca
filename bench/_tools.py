"""What a benchmark needs to call the tool implementations: importing this sets Django up
(settings and apps; nothing migrated: they reach models through the role registry), and
a journal that keeps a command's writes in memory."""

from __future__ import annotations

from typing import Any

import _setup  # noqa: F401  (puts the project on sys.path and names the settings)
import django

django.setup()


class MemoryJournal:
    """Keeps the writes in memory: the overhead figures measure containment, not rows."""

    def begin(self, writes: list[Any], plan: dict[str, object]) -> None:
        self.writes = writes

    def end(self) -> None:
        pass
