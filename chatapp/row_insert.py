"""``Model.objects.create(...)`` as one plain INSERT: for the two rows every send stores.

The send stores the user's message and the queued run; through the ORM each ``create`` built and
compiled its INSERT anew, about twice the CPU of the statement itself (docs/performance.md, session
22). Here the statement is written once per model and bound by the server (``bound_cursor``); each
value goes through its field's ``pre_save`` and ``get_db_prep_save`` as the ORM's save does (defaults,
``auto_now_add``, a long text stored once in a blob). No ``pre_save``/``post_save`` signal is sent:
this project connects none to the models inserted here. Other databases keep the ORM's save.
"""

from __future__ import annotations

from functools import cache

from django.db import connection, models

from chatapp.bound_cursor import bound_cursor


@cache
def _sql(model: type[models.Model]) -> tuple[str, tuple[models.Field, ...]]:
    meta = model._meta
    pk = meta.pk
    if pk is None or not isinstance(pk, models.AutoField | models.BigAutoField):
        raise ValueError(f"{meta.label}: only models with a database-generated id")
    fields = tuple(f for f in meta.concrete_fields if isinstance(f, models.Field) and f is not pk)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column or f.name) for f in fields)
    values = ", ".join(["%s"] * len(fields))
    returning = quote(pk.column or "id")
    sql = f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({values}) RETURNING {returning}"  # noqa: S608
    return sql, fields  # the names are the model's own; the values are bound


def insert_row(obj: models.Model) -> None:
    """Store the unsaved ``obj`` as a new row and give it its id, as ``obj.save(force_insert=True)``."""
    sql, fields = _sql(type(obj))  # refuses a model whose id is not the database's, on any database
    if connection.vendor != "postgresql":
        obj.save(force_insert=True)
        return
    params = [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
    with bound_cursor(connection) as cursor:
        cursor.execute(sql, params)
        (obj.pk,) = cursor.fetchone()
    obj._state.adding = False
    obj._state.db = connection.alias
