"""Where replay finds a role's recorded tool decisions (dependency inversion).

The decisions are audit rows, which the sessions app owns, and ``roles`` never imports
``sessions_app``; so the sessions app registers its reader here when it starts
(``SessionsAppConfig.ready``), as it registers its readiness checks with
``acode.readiness``. ``roles`` sees only an iterator of ``RecordedDecision`` values.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Protocol

from roles.decision.replay import RecordedDecision


class DecisionHistory(Protocol):
    def __call__(
        self, *, role: str, since: datetime | None, until: datetime | None
    ) -> Iterator[RecordedDecision]:
        """A role's recorded decisions in ``[since, until)``, oldest first, lazily."""
        ...


_provider: list[DecisionHistory] = []


def decision_history_register(provider: DecisionHistory) -> None:
    """Install the reader of recorded decisions (the last one registered wins)."""
    _provider[:] = [provider]


def decision_history(
    *, role: str, since: datetime | None = None, until: datetime | None = None
) -> Iterator[RecordedDecision]:
    """The recorded decisions of ``role`` in the window; none when no reader is registered."""
    if not _provider:
        return iter(())
    return _provider[0](role=role, since=since, until=until)
