"""The rows a run's context is built from, read with statements written out once on PostgreSQL.

Every delivery of every run reads them before its first request (``context.py``: the run with its
conversation, the provider, the branch's links and messages); through the ORM building and compiling
those queries cost more CPU than running them (docs/performance.md, session 16), and the read runs
beside the lease, on the same core. ``tests/worker/test_context_rows.py`` checks each gives what the
ORM's query gives. Other databases (SQLite: the embedded demo, ``make check``) use the ORM's queries.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import connection

from chatapp import row_sql
from chatapp.bound_cursor import bound_cursor
from chatapp.models import Conversation, Message, ProviderConfig, Run


def run_with_conversation(run_id: int) -> Run:
    """``Run.objects.select_related("conversation").get(pk=run_id)``."""
    if connection.vendor != "postgresql":
        return Run.objects.select_related("conversation").get(pk=run_id)
    row = _one(_run_sql(), [run_id])
    if row is None:
        raise Run.DoesNotExist(f"no run {run_id}")
    n = len(row_sql.fields(Run))
    run = row_sql.instance(Run, row[:n])
    Run.conversation.field.set_cached_value(run, row_sql.instance(Conversation, row[n:]))
    return run


def provider_named(name: str) -> ProviderConfig:
    """``ProviderConfig.objects.get(name=name)``."""
    if connection.vendor != "postgresql":
        return ProviderConfig.objects.get(name=name)
    row = _one(_provider_sql(), [name])
    if row is None:
        raise ProviderConfig.DoesNotExist(f"no provider {name!r}")
    return row_sql.instance(ProviderConfig, row)


def branch_links(
    conversation_id: int,
) -> tuple[dict[int, tuple[str, int | None, int | None]], dict[int, int | None]]:
    """The conversation's messages as ``{id: (role, run_id, parent_run_id)}`` and its runs as
    ``{id: user_message_id}``: what the branch is walked over (``context.branch_rows``)."""
    if connection.vendor != "postgresql":
        rows = Message.objects.filter(conversation_id=conversation_id).values_list(
            "id", "role", "run_id", "parent_run_id"
        )
        questions = Run.objects.filter(conversation_id=conversation_id).values_list("id", "user_message_id")
        return {pk: (role, run, parent) for pk, role, run, parent in rows}, dict(questions)
    with bound_cursor(connection) as cursor:
        cursor.execute(_LINKS_SQL, [conversation_id])
        links = {pk: (role, run, parent) for pk, role, run, parent in cursor.fetchall()}
        cursor.execute(_QUESTIONS_SQL, [conversation_id])
        return links, dict(cursor.fetchall())


def messages_by_id(ids: list[int]) -> dict[int, Message]:
    """``Message.objects.in_bulk(ids)``."""
    if connection.vendor != "postgresql" or not ids:
        return Message.objects.in_bulk(ids)
    with bound_cursor(connection) as cursor:
        cursor.execute(_messages_sql(), [ids])
        rows = [row_sql.instance(Message, row) for row in cursor.fetchall()]
    return {m.pk: m for m in rows}


def _one(sql: str, params: list[Any]) -> Any:
    with bound_cursor(connection) as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


@cache
def _run_sql() -> str:
    return (
        f"SELECT {row_sql.columns(Run, 'r')}, {row_sql.columns(Conversation, 'c')}"  # noqa: S608 - the models' own names
        f" FROM {row_sql.table(Run)} r JOIN {row_sql.table(Conversation)} c ON c.id = r.conversation_id"
        " WHERE r.id = %s"
    )


@cache
def _provider_sql() -> str:
    columns, table = row_sql.columns(ProviderConfig, "p"), row_sql.table(ProviderConfig)
    return f"SELECT {columns} FROM {table} p WHERE p.name = %s"  # noqa: S608


@cache
def _messages_sql() -> str:
    columns, table = row_sql.columns(Message, "m"), row_sql.table(Message)
    return f"SELECT {columns} FROM {table} m WHERE m.id = ANY(%s)"  # noqa: S608


_LINKS_SQL = (
    f"SELECT id, role, run_id, parent_run_id FROM {Message._meta.db_table} WHERE conversation_id = %s"  # noqa: S608
)
_QUESTIONS_SQL = f"SELECT id, user_message_id FROM {Run._meta.db_table} WHERE conversation_id = %s"  # noqa: S608
