"""The session page's search index panel: how far the workspace's index got, refreshed by
the page itself (htmx polling) while a build runs, since a build is not a session event."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from uuid import UUID

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from acode.errors import AcodeError
from sessions_app.permissions import session_for
from sessions_app.services.search_index import index_progress, progress_note


@dataclass(frozen=True)
class SearchIndexPanel:
    """The index's state for the page; ``live``: the page asks again in a moment."""

    session_id: Any
    state: str
    files_indexed: int
    files_total: int
    note: str

    @property
    def live(self) -> bool:
        return self.state in ("missing", "building")

    @property
    def percent(self) -> int:
        return int(100 * self.files_indexed / self.files_total) if self.files_total else 0


def search_index_panel(session: Any) -> SearchIndexPanel:
    progress = index_progress(Path(session.workspace))
    note = progress_note(progress) or f"{progress.files_indexed:,} files indexed"
    return SearchIndexPanel(session.pk, progress.state, progress.files_indexed,
                            progress.files_total, note)  # fmt: skip


@login_required
@require_GET
def search_index(request: HttpRequest, pk: UUID) -> HttpResponse:
    """The panel alone, for the page's poll while the index is building."""
    try:
        session = session_for(cast(User, request.user), pk)
    except AcodeError:
        raise Http404("No such session, or it is not yours to see.") from None
    return render(request, "dashboard/session.html#search-index",
                  {"search_index": search_index_panel(session)})  # fmt: skip
