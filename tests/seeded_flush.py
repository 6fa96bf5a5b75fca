"""After a transactional test, the test database goes back to the rows it was seeded with,
in one transaction of plain SQL.

Django's flush truncates every table and then runs post_migrate again: content types,
auth permissions, and acode's seed (the shipped roles, written through the role services
with their audit rows, then the run templates). On a database of a few rows that costs
about 0.45 s on an idle machine and three times that under CI's load, and CI's PostgreSQL
pass flushes after about 500 tests. Here the seeded rows are copied once per test process,
right after the test database is set up (``django_db_setup`` in ``tests/conftest.py``);
a flush deletes every row and copies them back: about 30 ms.

What a test sees is what the seed wrote, ids and the role registry's stamp included
(a process that cached the registry at that stamp holds the seeded roles, which is right).
Django's foreign keys are deferrable, so one transaction deletes and inserts in any
order; no table has a delete trigger (the audit table's trigger is after insert, and the
copied rows were inserted through it once already). A test case that flushes a subset of
the apps (``available_apps``) or restores serialized contents keeps Django's flush.
"""

from __future__ import annotations

from django.core.management.color import no_style
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test import TransactionTestCase

PREFIX = "acode_seed_"  # copies are named by number: PostgreSQL cuts names at 63 bytes
_copies: dict[str, list[tuple[str, str]]] = {}  # database alias -> (table, its copy)


def seed_copy_take(connection: BaseDatabaseWrapper) -> None:
    """Copy every table that holds rows now (the seed) beside it."""
    quote = connection.ops.quote_name
    tables = sorted(connection.introspection.django_table_names(only_existing=True))
    copies = []
    with connection.cursor() as cursor:
        for stale in connection.introspection.table_names(cursor):
            if stale.startswith(PREFIX):
                cursor.execute(f"DROP TABLE {quote(stale)}")
        for number, table in enumerate(tables):
            cursor.execute(f"SELECT 1 FROM {quote(table)} LIMIT 1")
            if cursor.fetchone() is None:
                continue
            copy = f"{PREFIX}{number}"
            cursor.execute(f"CREATE TABLE {quote(copy)} AS SELECT * FROM {quote(table)}")
            copies.append((table, copy))
    _copies[connection.alias] = copies


def seed_copy_restore(connection: BaseDatabaseWrapper) -> None:
    quote = connection.ops.quote_name
    tables = connection.introspection.django_table_names(only_existing=True)
    if connection.vendor == "postgresql":
        # TRUNCATE gives each of the ~60 tables new files (about 250 ms); DELETE of a few
        # rows costs about 15 ms.
        statements = [
            "SET CONSTRAINTS ALL DEFERRED;",
            *(f"DELETE FROM {quote(table)};" for table in tables),
        ]
    else:
        statements = connection.ops.sql_flush(no_style(), tables)
    statements += [
        f"INSERT INTO {quote(table)} SELECT * FROM {quote(copy)};"
        for table, copy in _copies[connection.alias]
    ]
    connection.ops.execute_sql_flush(statements)


_django_teardown = TransactionTestCase._fixture_teardown


def _fixture_teardown(self: TransactionTestCase) -> None:
    databases = list(self._databases_names(include_mirrors=False))
    plain = self.available_apps is None and not self.serialized_rollback
    if not (plain and all(name in _copies for name in databases)):
        _django_teardown(self)
        return
    for name in databases:
        seed_copy_restore(connections[name])


def install() -> None:
    TransactionTestCase._fixture_teardown = _fixture_teardown
