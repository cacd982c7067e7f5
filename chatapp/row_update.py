"""``obj.save(update_fields=...)`` as one plain UPDATE: the row's named columns set from the object.

Every status move of a run saves its row this way (``run_lifecycle.move_locked``: the lease, the end,
pauses, stops), and the ORM's save (signals, the update query built and compiled) cost ~0.5 ms of CPU
of which the statement is a third (docs/performance.md, session 16). Each value goes through its
field's ``pre_save`` and ``get_db_prep_save`` as the ORM's save does (a long text is stored once in a
blob, dates are adapted, ``auto_now`` is set). No ``pre_save``/``post_save`` signal is sent: this
project connects none to the models saved here.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from django.db import DatabaseError, connection, models

from chatapp.bound_cursor import bound_cursor


@cache
def _sql(model: type[models.Model], names: tuple[str, ...]) -> tuple[str, tuple[models.Field, ...]]:
    meta = model._meta
    fields = tuple(f for f in (meta.get_field(name) for name in names) if isinstance(f, models.Field))
    if len(fields) != len(names):
        raise ValueError(f"not columns of {meta.label}: {names}")
    quote = connection.ops.quote_name
    sets = ", ".join(f"{quote(f.column or f.name)} = %s" for f in fields)
    pk = quote(meta.pk.column or "id") if meta.pk else "id"
    return f"UPDATE {quote(meta.db_table)} SET {sets} WHERE {pk} = %s", fields  # noqa: S608


def update_columns(obj: models.Model, names: Iterable[str]) -> None:
    """Write ``names`` of ``obj``'s row; DatabaseError when the row is gone (as ``save`` does)."""
    sql, fields = _sql(type(obj), tuple(dict.fromkeys(names)))
    params = [f.get_db_prep_save(f.pre_save(obj, False), connection) for f in fields]
    with bound_cursor(connection) as cursor:
        cursor.execute(sql, [*params, obj.pk])
        if cursor.rowcount == 0:
            raise DatabaseError("Save with update_fields did not affect any rows.")
