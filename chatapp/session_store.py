"""Django's database sessions, with the one read every signed-in request makes written out once.

Every page, send and websocket connect of a signed-in user reads its session row. Through the ORM
(``Session.objects.get(session_key=..., expire_date__gt=now)``) that read was 9.4 % of daphne's
samples while 20 users sent at once (docs/performance.md, session 21): 0.42 ms of CPU, of which the
statement itself is about 0.18 ms; the rest is building and compiling the same query every time.
Here, on PostgreSQL, the statement is written once and bound by the server (``bound_cursor``: prepared
on a connection's first use). Everything else (saving, creating, deleting, expiry, the signing of the
data) is Django's ``db`` engine unchanged, and ``tests/web/test_session_store.py`` checks that every
state of a session loads as Django's own engine loads it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.sessions.backends import db
from django.db import connection
from django.utils import timezone

from chatapp import row_sql
from chatapp.bound_cursor import bound_cursor


class SessionStore(db.SessionStore):
    def _get_session_from_db(self) -> Any:
        if connection.vendor != "postgresql":
            return super()._get_session_from_db()  # type: ignore[misc]
        with bound_cursor(connection) as cursor:
            cursor.execute(_sql(self.model), [self.session_key, timezone.now()])
            row = cursor.fetchone()
        if row is None:
            self._session_key = None  # as Django's: a missing or expired session starts afresh
            return None
        return row_sql.instance(self.model, row)

    async def _aget_session_from_db(self) -> Any:
        return await sync_to_async(self._get_session_from_db)()


@cache
def _sql(model: type) -> str:
    quote = connection.ops.quote_name
    key, expires = (quote(row_sql.column(model, name)) for name in ("session_key", "expire_date"))
    return (
        f"SELECT {row_sql.columns(model, 's')} FROM {row_sql.table(model)} s"  # noqa: S608 - the model's own names
        f" WHERE s.{key} = %s AND s.{expires} > %s"
    )
