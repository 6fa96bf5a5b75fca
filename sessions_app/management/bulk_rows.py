"""Fast bulk writes of plain rows for data generation: PostgreSQL ``COPY``, else
``executemany``. Rows are dicts keyed by field ``attname``; fields a row leaves out get
their model default. Nothing here goes through ``save()`` (no signals, no ``auto_now``):
the caller owns every value, history included."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from django.db import connection, models


class RowWriter:
    """Writes rows of one model; the database assigns auto-increment primary keys."""

    def __init__(self, model: type[models.Model]) -> None:
        self.model = model
        self.fields = [
            f
            for f in model._meta.concrete_fields
            if not (f.primary_key and isinstance(f, models.AutoField | models.BigAutoField))
        ]
        # get_default() is the model default, "" for text fields, else None.
        self.defaults = [f.get_default() for f in self.fields]
        self.postgres = connection.vendor == "postgresql"
        self.convert: list[Callable[[Any], Any]] = [self._converter(f) for f in self.fields]
        self.written = 0

    def _converter(self, field: models.Field[Any, Any]) -> Callable[[Any], Any]:
        if isinstance(field, models.JSONField):
            # COPY's text format hands the text to jsonb's own parser.
            return json.dumps
        if self.postgres:
            return _identity
        return lambda value: field.get_db_prep_value(value, connection, prepared=False)

    def values(self, row: dict[str, Any]) -> tuple[Any, ...]:
        out = []
        for field, default, convert in zip(self.fields, self.defaults, self.convert, strict=True):
            value = row.get(field.attname, default)
            if value is None and not field.null:
                raise KeyError(f"{self.model.__name__}.{field.attname} needs a value")
            out.append(None if value is None else convert(value))
        return tuple(out)

    def write(self, rows: Iterable[dict[str, Any]]) -> int:
        """Insert the rows in the caller's transaction; how many were written."""
        table = connection.ops.quote_name(self.model._meta.db_table)
        columns = ", ".join(connection.ops.quote_name(f.column) for f in self.fields)
        count = 0
        with connection.cursor() as cursor:
            if self.postgres:
                raw = cursor.cursor  # psycopg 3: COPY is its fastest way in
                with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(self.values(row))
                        count += 1
            else:
                marks = ", ".join(["%s"] * len(self.fields))
                batch = [self.values(row) for row in rows]
                cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", batch)
                count = len(batch)
        self.written += count
        return count


def _identity(value: Any) -> Any:
    return value
