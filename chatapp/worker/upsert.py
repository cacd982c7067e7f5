"""One statement that inserts a worker's row or updates it: ``INSERT … ON CONFLICT … DO UPDATE``.

A stored round and each tool-call status are written this way (``store.py``). The ORM's
``update_or_create`` is a savepoint, a locked read and a full-row ``UPDATE`` or ``INSERT``; its
``bulk_create(update_conflicts=True)`` cannot tell an insert from an update, which the run's
``tool_calls_count`` needs. Both PostgreSQL and SQLite (3.35+) run this SQL; the caller holds the
run's row lock under its lease, so no other writer touches these rows meanwhile.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from django.db import connection
from django.db.models import Field, Model
from django.utils import timezone

from chatapp.bound_cursor import bound_cursor


def upsert(model: type[Model], keys: dict[str, Any], values: dict[str, Any]) -> tuple[int, bool]:
    """Insert the row ``keys`` + ``values`` (other fields at their defaults) or, when a row with
    ``keys`` exists, set ``values`` on it; returns ``(pk, inserted)``. Names are attnames
    (``run_id``); ``keys`` must be the fields of a unique constraint."""
    fields = {f.attname: f for f in model._meta.concrete_fields if not f.primary_key}
    now = timezone.now()
    row = {name: _value(field, keys, values, now) for name, field in fields.items()}
    columns = [_column(fields[name]) for name in row]
    params = [fields[name].get_db_prep_save(value, connection) for name, value in row.items()]
    stamped = [name for name, f in fields.items() if getattr(f, "auto_now", False)]
    changed = [_column(fields[name]) for name in [*values, *stamped]]
    created = next(f for f in fields.values() if getattr(f, "auto_now_add", False))
    quote = connection.ops.quote_name
    sets = ", ".join(f"{quote(c)} = excluded.{quote(c)}" for c in changed)
    # Names come from the model, values are bound.
    key_columns = ", ".join(quote(_column(fields[name])) for name in keys)
    sql = (
        f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(c) for c in columns)}) "  # noqa: S608
        f"VALUES ({', '.join(['%s'] * len(columns))}) "
        f"ON CONFLICT ({key_columns}) DO UPDATE SET {sets} "
        f"RETURNING {quote(_column(model._meta.pk))}, {quote(_column(created))}"
    )
    # Bound by the server: a round's row holds its whole request (chatapp/bound_cursor.py).
    with bound_cursor(connection) as cursor:
        cursor.execute(sql, params)
        pk, created_at = cursor.fetchone()
    # An update keeps the row's own creation time, so only an insert returns the one just sent
    # (SQLite hands it back as a naive UTC datetime, PostgreSQL as an aware one).
    returned = created.to_python(created_at)
    if timezone.is_naive(returned):
        returned = timezone.make_aware(returned, UTC)
    return pk, returned == now


def _value(field: Field, keys: dict[str, Any], values: dict[str, Any], now: Any) -> Any:
    name = field.attname
    if name in keys:
        return keys[name]
    if name in values:
        return values[name]
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        return now
    return field.get_default()


def _column(field: Field) -> str:
    return str(field.column)  # every concrete field has one (Django types it as optional)
