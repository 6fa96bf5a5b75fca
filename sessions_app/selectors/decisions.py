"""The recorded tool decisions of a role, as replay reads them (``roles.history``).

Decision rows are ``ToolDecision`` (allowed), ``ToolDenied`` with phase "decision" and
``ToolConsent`` with phase "asked" (a call put to a person);
they are read oldest first in chunks by id (keyset), so a window of any size streams in
constant memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from django.db.models import Q
from django.db.models.functions import Upper

from roles.decision.replay import RecordedDecision, recorded_decision
from sessions_app.models import AuditEvent, AuditEventType

CHUNK = 2000
FIELDS = ("id", "created_at", "event_type", "result", "target", "details", "session_id")


def recorded_decisions(
    *, role: str, since: datetime | None = None, until: datetime | None = None,
    chunk: int = CHUNK,
) -> Iterator[RecordedDecision]:  # fmt: skip
    """Every decision recorded for ``role`` (its slug, any case) in ``[since, until)``."""
    rows = AuditEvent.objects.annotate(role_upper=Upper("role")).filter(
        Q(event_type=AuditEventType.TOOL_DECISION)
        | Q(event_type=AuditEventType.TOOL_DENIED, details__phase="decision")
        | Q(event_type=AuditEventType.TOOL_CONSENT, details__phase="asked"),
        role_upper=role.upper(),
    )
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    if until is not None:
        rows = rows.filter(created_at__lt=until)
    last = 0
    while True:
        page = list(rows.filter(id__gt=last).order_by("id").values_list(*FIELDS)[:chunk])
        for pk, at, event_type, result, target, details, session in page:
            yield recorded_decision(
                audit_id=pk, at=at, event_type=event_type, result=result, target=target,
                details=details or {}, session=str(session or ""),
            )  # fmt: skip
        if len(page) < chunk:
            return
        last = page[-1][0]
