"""Trigram indexes for the session search (board, session list, API ``q``) on PostgreSQL.

The search is ``UPPER(column) LIKE UPPER('%text%')`` over title, task and last reason
(``SessionFilter.filter_text``); with ``pg_trgm`` GIN indexes on the same expressions,
PostgreSQL reads only the matching rows instead of every session's text. Elsewhere (SQLite)
nothing is created. Where the database user may not create the extension (it is a trusted
extension from PostgreSQL 13: the database owner may), the indexes are skipped with a
warning and the search still works, by a scan.
"""

import logging

from django.db import migrations, transaction
from django.db.utils import DatabaseError

logger = logging.getLogger(__name__)

TABLE = "sessions_app_agentsession"
COLUMNS = ("title", "task", "last_reason")


def create(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic(using=connection.alias):
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DatabaseError as exc:
        logger.warning("session search indexes skipped: cannot create pg_trgm (%s)", exc)
        return
    for column in COLUMNS:
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS session_{column}_trgm ON {TABLE} "
            f"USING gin (UPPER({column}) gin_trgm_ops)"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for column in COLUMNS:
        schema_editor.execute(f"DROP INDEX IF EXISTS session_{column}_trgm")


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0011_session_audit_head")]

    operations = [migrations.RunPython(create, drop)]
