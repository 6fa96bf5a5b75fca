"""Fewer and cheaper database round trips on hot write paths, inside Django's transactions.

The role-transition path (bench/transitions.py) issues six statements. Through the ORM
each one is compiled on every call and then waited for. Here each statement shape is
compiled once per process, values are prepared with the fields' own ``get_db_prep_save``
and rows converted with the fields' own converters (so they are exactly what ``save()``
writes and the ORM reads, on every backend), and on PostgreSQL the statements are sent in
psycopg's pipeline mode: a result is waited for only when it is read, and whatever was
queued is flushed at the end of the block. Elsewhere statements run one after another.

On PostgreSQL these statements also go through ``statement_cursor``: server-side
parameters and a statement prepared once per connection, so the server parses and plans
each shape once per pooled connection instead of on every request (planning the token
lookup's join cost more than running it). The ORM keeps Django's client-side binding;
``ACODE_DB_PREPARED=0`` turns preparing off (for a transaction-mode pooler that cannot
keep prepared statements).

Plain columns only: no expressions, no generated fields, no custom placeholders.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connections
from django.db.models import Field, Model

M = TypeVar("M", bound=Model)


@contextlib.contextmanager
def pipelined(using: str = "default") -> Iterator[None]:
    """Batch the statements issued inside into as few round trips as the driver allows."""
    connection = connections[using]
    connection.ensure_connection()
    raw: Any = connection.connection
    if connection.vendor != "postgresql" or not hasattr(raw, "pipeline"):
        yield
        return
    # Errors of queued statements surface when the pipeline syncs; map them to Django's
    # exceptions (IntegrityError, ...) as a normal execute would.
    with connection.wrap_database_errors, raw.pipeline():
        yield


@functools.cache
def _preparing_cursor_class() -> type:
    from django.db.backends.postgresql import base

    server_binding: Any = getattr(base, "ServerBindingCursor")  # noqa: B009 - not in the stubs

    class PreparingCursor(server_binding):
        """Server-side binding, every statement prepared on the connection on first use."""

        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            return super().execute(query, params, prepare=True)

    return PreparingCursor


def statement_cursor(using: str = "default") -> Any:
    """A Django cursor for this module's statements (a context manager, like ``cursor()``).

    On PostgreSQL with prepared statements enabled (the connection's ``prepare_threshold``
    is set) it binds parameters on the server and prepares each statement once per
    connection; otherwise it is the connection's ordinary cursor.
    """
    connection: Any = connections[using]
    if (
        connection.vendor != "postgresql"
        or connection.settings_dict["OPTIONS"].get("prepare_threshold") is None
    ):
        return connection.cursor()
    # What connection.cursor() does, with the cursor class swapped.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        return connection._prepare_cursor(_preparing_cursor_class()(connection.connection))


def _qn(using: str, name: str) -> str:
    return str(connections[using].ops.quote_name(name))


@functools.cache
def _insert_fields(model: type[Model]) -> list[Field[Any, Any]]:
    meta = model._meta
    return [f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field]


@functools.cache
def _insert_sql(model: type[Model], using: str) -> str:
    fields = _insert_fields(model)
    columns = ", ".join(_qn(using, f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    return f"INSERT INTO {_qn(using, model._meta.db_table)} ({columns}) VALUES ({marks})"


def execute_insert(cursor: Any, instance: Model, using: str = "default") -> None:
    """Send an INSERT of ``instance`` without fetching anything back.

    Unlike ``save()`` there is no ``RETURNING``, so nothing waits for the server here;
    an auto primary key stays unset on the instance. No signals are sent.
    """
    connection = connections[using]
    params = [
        f.get_db_prep_save(f.pre_save(instance, True), connection)
        for f in _insert_fields(type(instance))
    ]
    cursor.execute(_insert_sql(type(instance), using), params)


@functools.cache
def _update_sql(model: type[Model], names: tuple[str, ...], using: str) -> str:
    meta: Any = model._meta
    sets = ", ".join(f"{_qn(using, meta.get_field(n).column)} = %s" for n in names)
    return f"UPDATE {_qn(using, meta.db_table)} SET {sets} WHERE {_qn(using, meta.pk.column)} = %s"


def execute_update(
    cursor: Any, model: type[Model], pk: Any, values: Mapping[str, Any], using: str = "default"
) -> None:
    """Send ``UPDATE model SET values WHERE pk = pk`` without waiting for the row count."""
    connection = connections[using]
    meta: Any = model._meta
    names = tuple(values)
    params = [meta.get_field(n).get_db_prep_save(values[n], connection) for n in names]
    params.append(meta.pk.get_db_prep_value(pk, connection))
    cursor.execute(_update_sql(model, names, using), params)


@dataclass(frozen=True)
class _Reader:
    """How a compiled query's rows become model instances."""

    columns: list[str]  # the select list, compiled ("table"."column")
    names: list[str]
    converters: Sequence[tuple[int, list[Any], Any]]

    def instance(self, model: type[M], row: Sequence[Any], using: str) -> M:
        values = list(row)
        connection = connections[using]
        for pos, convs, expression in self.converters:
            value = values[pos]
            for converter in convs:
                value = converter(value, expression, connection)
            values[pos] = value
        return model.from_db(using, self.names, values)


def _reader(compiler: Any) -> _Reader:
    columns = [column for column, _, _ in compiler.select]
    converters = compiler.get_converters(columns)
    return _Reader(
        [compiler.compile(column)[0] for column in columns],
        [column.target.attname for column in columns],
        [(pos, convs, expression) for pos, (convs, expression) in converters.items()],
    )


@dataclass(frozen=True)
class _Select:
    sql: str
    key: Any  # the field the parameter is compared with; prepares each call's value
    reader: _Reader


_compiled: dict[tuple[type[Model], str, bool, str], _Select] = {}


def _select(model: type[Model], lookup: str, for_update: bool, using: str, value: Any) -> _Select:
    """``SELECT <model's columns> WHERE <lookup> = %s``, compiled on first use."""
    cache_key = (model, lookup, for_update, using)
    found = _compiled.get(cache_key)
    if found is not None:
        return found
    queryset = model._default_manager.using(using).filter(**{lookup: value})
    if for_update:
        queryset = queryset.select_for_update()
    compiler: Any = queryset.query.get_compiler(using=using)
    sql, params = compiler.as_sql()
    condition: Any
    (condition,) = queryset.query.where.children  # one equality, one parameter
    if len(params) != 1 or getattr(condition, "lookup_name", "") != "exact":
        raise ValueError(f"PendingRow needs one equality lookup, got {sql!r}")
    found = _Select(sql, condition.lhs.target, _reader(compiler))
    _compiled[cache_key] = found
    return found


@functools.cache
def _row_reader(model: type[Model], using: str) -> _Reader:
    compiler: Any = model._default_manager.using(using).all().query.get_compiler(using=using)
    compiler.setup_query()
    return _reader(compiler)


def returning_columns(model: type[Model], using: str = "default") -> str:
    """Every column of ``model`` for a ``RETURNING`` clause, as ``instance_from_row`` reads them."""
    return ", ".join(_row_reader(model, using).columns)


def instance_from_row(model: type[M], row: Sequence[Any], using: str = "default") -> M:
    """A model instance from a row of ``returning_columns``, converted as the ORM does."""
    return _row_reader(model, using).instance(model, row, using)


class PendingRow(Generic[M]):
    """The one row whose ``lookup`` (a field path, primary key by default) equals ``value``,
    sent now and read later.

    Sending several before reading the first puts them in one round trip on PostgreSQL
    (inside ``pipelined``). The statement is compiled once per process; only the value
    changes. ``for_update`` locks the row (``SELECT ... FOR UPDATE``; use it without
    joins, so that only that row is locked).
    """

    def __init__(
        self,
        model: type[M],
        value: Any,
        *,
        lookup: str = "pk",
        for_update: bool = False,
        using: str = "default",
    ) -> None:
        self.model = model
        self.using = using
        self.select = _select(model, lookup, for_update, using, value)
        # A cursor of its own: a second statement on a shared cursor would replace this
        # one's result before it is read.
        self.cursor = statement_cursor(using)
        self.cursor.execute(
            self.select.sql, [self.select.key.get_db_prep_value(value, connections[using])]
        )

    def get(self) -> M | None:
        """The row as a model instance (waits for the server if needed), or None."""
        try:
            row = self.cursor.fetchone()
        finally:
            self.cursor.close()
        if row is None:
            return None
        return self.select.reader.instance(self.model, row, self.using)


def fetch_one(
    model: type[M], value: Any, *, lookup: str = "pk", using: str = "default"
) -> M | None:
    """The one row whose ``lookup`` equals ``value``, read now, without compiling a query."""
    return PendingRow(model, value, lookup=lookup, using=using).get()
