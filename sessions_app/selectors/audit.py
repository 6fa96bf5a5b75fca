"""The audit log read for export: every matching row once, streamed from the database."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from django.db import connection, transaction
from django.db.models import QuerySet

from sessions_app.models import AuditEvent


def audit_rows_streamed(
    rows: QuerySet[AuditEvent], columns: list[str], *, chunk_size: int
) -> Generator[tuple[Any, ...], None, None]:
    """``columns`` of ``rows``, read through a database cursor ``chunk_size`` rows a fetch.

    On PostgreSQL the cursor is read inside a transaction: outside one Django declares it
    WITH HOLD, and PostgreSQL then copies the whole result aside at the first fetch (a
    full export would wait for, and hold, every row before its first byte). It is also
    one consistent snapshot. SQLite reads in chunks without one (and a transaction there
    would take the write lock for the whole export).
    """
    held: AbstractContextManager[Any] = (
        transaction.atomic() if connection.vendor == "postgresql" else nullcontext()
    )
    with held:
        yield from rows.values_list(*columns).iterator(chunk_size=chunk_size)
