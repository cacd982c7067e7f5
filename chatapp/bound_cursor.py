"""A cursor whose parameters PostgreSQL binds itself (psycopg's server-side binding), for the
statements written out on the hot paths: a step's frames and rows, the run's reads and moves, the
send's checks.

Django's psycopg cursors bind client-side: each parameter is quoted into the SQL text in Python, and
PostgreSQL parses and plans every statement anew. A round's frame and its row each hold the round's
whole request (10-20 KB), and quoting them (psycopg's ``ListDumper`` and ``Dumper.quote``) was 11 % of
the worker's CPU in the 000 §6 profile (docs/performance.md, session 15). Bound by the server, the
values go as they are; with ``%b``, arrays go in binary, with no escaping at all. And a statement
bound by the server can be prepared: with ``DB_PREPARED_STATEMENTS`` on (settings.py) psycopg prepares
each on a connection's first use, and PostgreSQL skips parsing and planning it from then on (the §6
run's PostgreSQL CPU 14-16 → 9.5-11 ms, session 18). The ORM's own statements keep Django's
client-side binding: session 12 measured server-side binding for all of them and found no gain.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from django.db.backends.utils import CursorWrapper


@cache
def _cursor_class() -> type:
    from django.db.backends.postgresql.base import ServerBindingCursor

    class BoundCursor(ServerBindingCursor):
        """psycopg keeps the statement it sent (``_query``, which Django's query log reads) only when
        it runs it unprepared; this keeps it for a prepared one too, so DEBUG's log and the tests'
        captured SQL show every statement alike (their text with ``$n`` placeholders)."""

        def _send_query_prepared(self, name: bytes, pgq: Any, *, binary: bool | None = None) -> None:
            self._query = pgq
            super()._send_query_prepared(name, pgq, binary=binary)  # type: ignore[misc]

    return BoundCursor


@contextmanager
def bound_cursor(connection: Any) -> Iterator[CursorWrapper]:
    """Django's cursor (its query log and the tests' counters see it) with server-side binding on
    PostgreSQL; the usual cursor on other databases (SQLite binds its parameters anyway)."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            yield cursor
        return
    connection.ensure_connection()
    raw = connection.connection
    # The class is chosen when a cursor is made: only this one binds server-side.
    factory, raw.cursor_factory = raw.cursor_factory, _cursor_class()
    try:
        cursor = connection.cursor()
    finally:
        raw.cursor_factory = factory
    with cursor:
        yield cursor
