"""Model rows read by SQL written once, for the few reads every send, lease and end makes.

The ORM builds and compiles a query on every call: for the send's conversation read and the run's
locked read that was 1-2.5 ms of CPU against ~0.3 ms for the statement itself (docs/performance.md,
session 16). These helpers give the column list of a model for a ``SELECT`` and turn the columns read
back into an instance the way the ORM does (each field's ``from_db_value``: a JSON column decoded, a
long text read from its blob). Callers write the statement and keep a test that its rows equal the
ORM's.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import connection, models

from chatapp.bound_cursor import bound_cursor


@cache
def fields(model: type[models.Model]) -> tuple[models.Field, ...]:
    return tuple(f for f in model._meta.concrete_fields if isinstance(f, models.Field))


def table(model: type[models.Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def columns(model: type[models.Model], alias: str) -> str:
    """``alias."col", ...`` for every concrete field of ``model``, in ``fields(model)`` order."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(f.column or f.name)}" for f in fields(model))


def instance(model: type[models.Model], values: Any) -> Any:
    """The model instance for one row's ``columns(model, ...)`` values, as the ORM loads it."""
    own = fields(model)
    converted = [_from_db(f, v) for f, v in zip(own, values, strict=True)]
    return model.from_db(connection.alias, [f.attname for f in own], converted)


def partial(model: type[models.Model], names: list[str], values: list[Any]) -> Any:
    """An instance with only ``names`` loaded (any other field is read from the database when used)."""
    meta = model._meta
    converted = [_from_db(meta.get_field(n), v) for n, v in zip(names, values, strict=True)]
    return model.from_db(connection.alias, names, converted)


def all_rows(model: type[models.Model], where: str = "", params: tuple[Any, ...] = ()) -> list[Any]:
    """The rows of ``model`` matching ``where`` (SQL over the alias ``t``), in the model's default
    ordering, as instances loaded the way the ORM loads them."""
    with bound_cursor(connection) as cursor:
        cursor.execute(_select(model, where), params)
        return [instance(model, row) for row in cursor.fetchall()]


@cache
def _select(model: type[models.Model], where: str) -> str:
    quote = connection.ops.quote_name
    order = []
    for name in model._meta.ordering or ():
        if not isinstance(name, str):
            raise ValueError(f"{model.__name__}: only plain field names are supported in its ordering")
        order.append(f"t.{quote(column(model, name.lstrip('-')))}{' DESC' if name.startswith('-') else ''}")
    sql = f"SELECT {columns(model, 't')} FROM {table(model)} t"  # noqa: S608 - the model's own names; values are parameters
    if where:
        sql += f" WHERE {where}"
    return sql + (f" ORDER BY {', '.join(order)}" if order else "")


def column(model: type[models.Model], name: str) -> str:
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field) or not field.column:
        raise ValueError(f"{model.__name__}.{name} is not a column")
    return field.column


def _from_db(field: Any, value: Any) -> Any:
    convert = getattr(field, "from_db_value", None)
    return convert(value, None, connection) if convert is not None and value is not None else value
