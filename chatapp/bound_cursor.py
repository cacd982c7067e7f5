"""A cursor whose parameters PostgreSQL binds itself (psycopg's server-side binding), for the
worker's statements with large parameters: a step's frames and the rows of its rounds and calls.

Django's psycopg cursors bind client-side: each parameter is quoted into the SQL text in Python. A
round's frame and its row each hold the round's whole request (10-20 KB), and quoting them
(psycopg's ``ListDumper`` and ``Dumper.quote``) was 11 % of the worker's CPU in the 000 §6 profile
(docs/performance.md, session 15). Bound by the server, the values go as they are; with ``%b``,
arrays go in binary, with no escaping at all. Session 12 measured server-side binding for every query
(``OPTIONS["server_side_binding"]``) and found no gain: the ORM's many small statements gain
nothing from it. Statements are still not prepared (Django's default, which connection poolers need).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db.backends.utils import CursorWrapper


@contextmanager
def bound_cursor(connection: Any) -> Iterator[CursorWrapper]:
    """Django's cursor (its query log and the tests' counters see it) with server-side binding on
    PostgreSQL; the usual cursor on other databases (SQLite binds its parameters anyway)."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            yield cursor
        return
    from django.db.backends.postgresql.base import ServerBindingCursor

    connection.ensure_connection()
    raw = connection.connection
    # The class is chosen when a cursor is made: only this one binds server-side.
    factory, raw.cursor_factory = raw.cursor_factory, ServerBindingCursor
    try:
        cursor = connection.cursor()
    finally:
        raw.cursor_factory = factory
    with cursor:
        yield cursor
