"""The audit log page: newest first, filtered with ``AuditFilter`` (the same names as the
export API's, so its export links carry the filters), and the chain status: the last
stored verification (periodic, or run on request by users who may verify)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, cast
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from sessions_app.dashboard.formatting import RoleBadge, all_role_badges, role_badge
from sessions_app.filters import AuditFilter, audit_order
from sessions_app.models import AuditEvent, AuditEventType
from sessions_app.permissions import audit_visible_to, can_verify_audit
from sessions_app.services.audit_verify import audit_last_verification, audit_verify_record

AUDIT_TEMPLATE = "dashboard/audit.html"
AUDIT_PAGE_SIZE = 50
# The page counts matches up to this many: an exact count of a million-row log takes
# longer than the rest of the page. Past it, the pages cover the newest this many (the
# export and the API's cursor reach the rest).
AUDIT_COUNT_LIMIT = 10_000


class CappedPaginator(Paginator):
    """A paginator that counts at most ``limit`` rows (``capped`` says there are more)."""

    def __init__(self, object_list: Any, per_page: int, *, limit: int) -> None:
        super().__init__(object_list, per_page)
        self.limit = limit

    @cached_property
    def found(self) -> int:
        return int(self.object_list[: self.limit + 1].count())  # type: ignore[attr-defined]

    @cached_property
    def count(self) -> int:
        return min(self.found, self.limit)

    @property
    def capped(self) -> bool:
        return self.found > self.limit

    @property
    def limit_text(self) -> str:
        return f"{self.limit:,}"


@dataclass(frozen=True)
class AuditRow:
    id: int
    chain: str
    chain_kind: str  # "session" or "global"
    seq: int
    event_type: str
    event_label: str
    session_id: str | None
    role: RoleBadge | None
    actor: str
    target: str
    result: str
    details: str
    at: datetime
    hash: str


def audit_rows(events: Iterable[AuditEvent]) -> list[AuditRow]:
    labels = dict(AuditEventType.choices)
    return [
        AuditRow(
            id=e.pk,
            chain=e.chain,
            chain_kind=e.chain.partition(":")[0],
            seq=e.seq,
            event_type=e.event_type,
            event_label=str(labels.get(e.event_type, e.event_type)),
            session_id=str(e.session_id) if e.session_id else None,
            role=role_badge(e.role) if e.role else None,
            actor=e.actor,
            target=e.target,
            result=e.result,
            details=json.dumps(e.details, ensure_ascii=False, sort_keys=True) if e.details else "",
            at=e.created_at,
            hash=e.hash,
        )
        for e in events
    ]


def filter_query(filters: AuditFilter) -> str:
    """The filters applied (the valid ones) as a query string, for pages and export links."""
    params = {}
    for name, value in filters.form.cleaned_data.items():
        if value in (None, ""):
            continue
        params[name] = value.isoformat() if isinstance(value, datetime) else str(value)
    return urlencode(params)


@login_required
@require_GET
def audit(request: HttpRequest) -> HttpResponse:
    """The audit log, newest first: filterable, paginated, exportable with the same filters."""
    user = cast(User, request.user)
    filters = AuditFilter(request.GET, queryset=audit_visible_to(user))
    matching = filters.qs  # validates the filters: invalid ones are left out
    events = matching.order_by(*audit_order(filters.form.cleaned_data))
    paginator = CappedPaginator(events, AUDIT_PAGE_SIZE, limit=AUDIT_COUNT_LIMIT)
    page_obj = paginator.get_page(request.GET.get("page"))
    return render(
        request,
        AUDIT_TEMPLATE,
        {
            "nav": "audit",
            "form": filters.form,
            "query": filter_query(filters),
            "page_obj": page_obj,
            "rows": audit_rows(page_obj.object_list),
            "all_roles": all_role_badges(),
            "can_verify": can_verify_audit(user),
            "chain": audit_last_verification(),
        },
    )


@login_required
@require_GET
def audit_chain(request: HttpRequest) -> HttpResponse:
    """Verify the whole audit log now, store and show the outcome (the page's "Verify now").

    It re-hashes every row, so only users who may verify the audit log can ask for it.
    """
    if not can_verify_audit(request.user):
        raise PermissionDenied("Verifying the audit chain needs the view_auditevent permission.")
    _, stored = audit_verify_record(actor=request.user.get_username())
    return render(request, f"{AUDIT_TEMPLATE}#chain", {"chain": stored, "can_verify": True})
