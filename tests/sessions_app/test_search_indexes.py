"""The session search (board, session list, API ``q``) has trigram indexes on PostgreSQL,
and PostgreSQL uses them for the search's own SQL."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from sessions_app.filters import SessionFilter
from sessions_app.models import AgentSession
from tests.conftest import RUN_ON_POSTGRES

pytestmark = pytest.mark.django_db


def test_the_search_reads_the_trigram_indexes_on_postgresql(user: Any) -> None:
    if connection.vendor != "postgresql":
        pytest.skip(f"trigram indexes are PostgreSQL's; {RUN_ON_POSTGRES}")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexname LIKE %s",
            [AgentSession._meta.db_table, "%_trgm"],
        )
        names = {row[0] for row in cursor.fetchall()}
    assert names == {"session_title_trgm", "session_task_trgm", "session_last_reason_trgm"}
    search = SessionFilter({"q": "cache"}, queryset=AgentSession.objects.all()).qs.order_by()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table: make the choice visible
        plan = search.explain()
    for name in names:
        assert name in plan, plan
