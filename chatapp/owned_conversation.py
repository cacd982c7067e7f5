"""The conversation a write names, read with its owner's check and whether the writer audits, in one
statement (``access.owned_conversation_or_404``: every send, edit, stop and upload asks it).

On PostgreSQL the statement is written out once: the ORM's version (a filter, ``select_related``, an
``Exists`` over the user's groups, ``first()``) was 15 % of daphne's samples while 20 users sent at
once, nearly all of it building and compiling the query (docs/performance.md, session 16).
``tests/web/test_owned_conversation.py`` checks the rows and the answer equal the ORM's. Other
databases go through the ORM.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.db.models import Exists

from chatapp import row_sql
from chatapp.bound_cursor import bound_cursor
from chatapp.models import Conversation


def read(
    user_id: Any, conversation_id: int, related: tuple[str, ...], auditors: str | None
) -> tuple[Any, bool | None]:
    """(the user's live conversation or None, whether the user is in the group ``auditors``; None when
    that is not asked, ``auditors`` None)."""
    asking = auditors is not None
    if connection.vendor != "postgresql":
        return _through_orm(user_id, conversation_id, related, auditors)
    with bound_cursor(connection) as cursor:
        params: list[Any] = [auditors, user_id] if asking else []
        cursor.execute(_sql(related, asking), [*params, conversation_id, user_id])
        row = cursor.fetchone()
    if row is None:
        return None, None
    n = len(row_sql.fields(Conversation))
    conversation = row_sql.instance(Conversation, row[:n])
    at = n
    for name in related:
        field: Any = Conversation._meta.get_field(name)
        model = field.related_model
        width = len(row_sql.fields(model))
        values = row[at : at + width]
        at += width
        pk_at = [f.primary_key for f in row_sql.fields(model)].index(True)
        field.set_cached_value(
            conversation, row_sql.instance(model, values) if values[pk_at] is not None else None
        )
    return conversation, (bool(row[at]) if asking else None)


@cache
def _sql(related: tuple[str, ...], asking: bool) -> str:
    quote = connection.ops.quote_name
    selected, joins = [row_sql.columns(Conversation, "c")], []
    for i, name in enumerate(related):
        field: Any = Conversation._meta.get_field(name)
        model = field.related_model
        selected.append(row_sql.columns(model, f"j{i}"))
        pk = quote(model._meta.pk.column)
        joins.append(f" LEFT JOIN {row_sql.table(model)} j{i} ON j{i}.{pk} = c.{quote(field.column)}")
    if asking:
        selected.append(_audits_sql())
    return (
        f"SELECT {', '.join(selected)} FROM {row_sql.table(Conversation)} c{''.join(joins)}"  # noqa: S608 - the models' own names
        " WHERE c.id = %s AND c.owner_id = %s AND c.deleted_at IS NULL"
    )


def _audits_sql() -> str:
    through: Any = get_user_model().groups.through
    user_column = through._meta.get_field(get_user_model()._meta.model_name).column
    group_column = through._meta.get_field("group").column
    return (
        f"EXISTS(SELECT 1 FROM {row_sql.table(through)} ug JOIN {row_sql.table(Group)} g"  # noqa: S608
        f" ON g.id = ug.{group_column} WHERE g.name = %s AND ug.{user_column} = %s)"
    )


def _through_orm(
    user_id: Any, conversation_id: int, related: tuple[str, ...], auditors: str | None
) -> tuple[Any, bool | None]:
    asking = auditors is not None
    rows = Conversation.objects.filter(pk=conversation_id, owner_id=user_id, deleted_at__isnull=True)
    if related:
        rows = rows.select_related(*related)
    if asking:
        rows = rows.annotate(owner_audits=Exists(Group.objects.filter(name=auditors, user=user_id)))
    conversation = rows.first()
    if conversation is None:
        return None, None
    return conversation, (bool(getattr(conversation, "owner_audits", False)) if asking else None)
