"""query_database on PostgreSQL: a SELECT-only role in its own schema.

``ensure_demo_database(admin_dsn)`` (idempotent) creates schema ``clearloop_demo`` with the demo
tables and a login role that may only SELECT from them, with ``default_transaction_read_only``,
``statement_timeout`` and ``search_path`` set on the role itself. ``PostgresBackend(dsn)`` connects
as that role and, in addition, runs every statement prepared (one statement only) inside a
``READ ONLY`` transaction it rolls back. Any one of these layers alone already refuses writes.
"""

from __future__ import annotations

import contextlib
import time

import psycopg
from psycopg import sql as pgsql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from agent.tools.demo_data import ORDERS, USERS
from agent.tools.sql import MAX_VALUE_BYTES, QueryRefused, QueryResult, QueryTimeout, rows_to_result

DEMO_SCHEMA = "clearloop_demo"
DEMO_ROLE = "clearloop_demo_reader"

_TABLES = """
CREATE TABLE IF NOT EXISTS {schema}.users (
    id integer PRIMARY KEY,
    name text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS {schema}.orders (
    id integer PRIMARY KEY,
    user_id integer NOT NULL REFERENCES {schema}.users(id),
    product text NOT NULL,
    amount numeric(10, 2) NOT NULL,
    status text NOT NULL,
    created_at timestamptz NOT NULL
);
"""


def ensure_demo_database(
    admin_dsn: str,
    *,
    role: str = DEMO_ROLE,
    password: str | None = None,
    statement_timeout_ms: int = 5000,
) -> str:
    """Create or refresh the demo schema, data and SELECT-only role; return the reader's DSN.

    ``admin_dsn`` must be able to create schemas and roles in its database. Safe to call on every
    start: tables are created if missing, rows upserted, grants re-applied. Concurrent callers (two
    workers starting, in the same or in different databases) are safe: see ``_CONCURRENT_ATTEMPTS`` and
    ``_SCHEMA_LOCK``.
    """
    for attempt in range(_CONCURRENT_ATTEMPTS):
        try:
            dbname = _ensure_once(admin_dsn, role, password, statement_timeout_ms)
            break
        except psycopg.errors.InternalError_ as exc:
            if "concurrently" not in str(exc) or attempt == _CONCURRENT_ATTEMPTS - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    params = conninfo_to_dict(admin_dsn)
    params.update(user=role, dbname=dbname)
    params.pop("password", None)
    if password:
        params["password"] = password
    return make_conninfo("", **params)


# A role and its settings live in shared catalogs, and PostgreSQL answers two sessions updating the
# same catalog row at once with "tuple concurrently updated" (XX000) instead of waiting; advisory locks
# cannot serialize callers in different databases. Every step is idempotent, so the loser starts over.
_CONCURRENT_ATTEMPTS = 6


# CREATE SCHEMA / TABLE IF NOT EXISTS look before they insert their catalog rows, so two sessions
# creating the demo schema at once in one database fail with a unique violation on pg_namespace
# (seen in CI; a worker and daphne starting together on a fresh database do the same). This lock,
# per database and held to the end of the transaction, makes the later caller wait and find it made.
_SCHEMA_LOCK = 0x636C_6C70_6465_6D6F  # "cllpdemo" in ASCII


def _ensure_once(admin_dsn: str, role: str, password: str | None, timeout_ms: int) -> str:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        _create_role(conn, role, password)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            _create_schema(conn)
            _grant(conn, role, timeout_ms)
        return conn.info.dbname


def _create_role(conn: psycopg.Connection, role: str, password: str | None) -> None:
    # Roles are cluster-wide and CREATE ROLE has no IF NOT EXISTS; concurrent callers may race here.
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    ident = pgsql.Identifier(role)
    if not exists:
        try:
            conn.execute(pgsql.SQL("CREATE ROLE {} LOGIN").format(ident))
        except psycopg.errors.DuplicateObject:
            pass
    conn.execute(
        pgsql.SQL("ALTER ROLE {} NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS LOGIN").format(
            ident
        )
    )
    if password:
        conn.execute(pgsql.SQL("ALTER ROLE {} PASSWORD {}").format(ident, pgsql.Literal(password)))


def _create_schema(conn: psycopg.Connection) -> None:
    schema = pgsql.Identifier(DEMO_SCHEMA)
    conn.execute(pgsql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
    conn.execute(pgsql.SQL(_TABLES).format(schema=schema))
    with conn.cursor() as cur:
        cur.executemany(
            pgsql.SQL(
                "INSERT INTO {}.users (id, name, created_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, created_at = EXCLUDED.created_at"
            ).format(schema),
            USERS,
        )
        cur.executemany(
            pgsql.SQL(
                "INSERT INTO {}.orders (id, user_id, product, amount, status, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                "user_id = EXCLUDED.user_id, product = EXCLUDED.product, amount = EXCLUDED.amount, "
                "status = EXCLUDED.status, created_at = EXCLUDED.created_at"
            ).format(schema),
            ORDERS,
        )


def _grant(conn: psycopg.Connection, role: str, timeout_ms: int) -> None:
    ident, schema = pgsql.Identifier(role), pgsql.Identifier(DEMO_SCHEMA)
    for stmt in (
        "REVOKE ALL ON SCHEMA {schema} FROM PUBLIC",
        "REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM {role}",
        "REVOKE ALL ON ALL SEQUENCES IN SCHEMA {schema} FROM {role}",
        "REVOKE CREATE ON SCHEMA public FROM {role}",
        "GRANT USAGE ON SCHEMA {schema} TO {role}",
        "GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}",
    ):
        conn.execute(pgsql.SQL(stmt).format(schema=schema, role=ident))
    settings = {
        "default_transaction_read_only": "on",
        "statement_timeout": str(timeout_ms),
        "search_path": DEMO_SCHEMA,
        "idle_in_transaction_session_timeout": "10000",
    }
    for name, value in settings.items():
        conn.execute(
            pgsql.SQL("ALTER ROLE {} SET {} = {}").format(ident, pgsql.Identifier(name), pgsql.Literal(value))
        )


# The model's statement runs as a subquery so that each row's size is measured by the server before
# anything is sent (issue 16, M3): a row over the cap comes back as NULLs with "over" set, so the worker
# never receives it. Data-modifying statements are a syntax error in this position, which only adds to
# the read-only layers above. The lateral join keeps the subquery's row order (a nested loop over it).
# The model's SQL is the input by design (S608): the role and the read-only transaction confine it.
_CAPPED = (
    'SELECT v.*, pg_column_size(q.*) > {cap} AS "clearloop row over cap" FROM (\n{sql}\n) AS q '  # noqa: S608
    "LEFT JOIN LATERAL (SELECT q.* WHERE pg_column_size(q.*) <= {cap}) AS v ON true LIMIT {limit}"
)


def capped_statement(sql: str, limit: int, cap: int = MAX_VALUE_BYTES) -> str:
    body = sql.strip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    return _CAPPED.format(sql=body, cap=int(cap), limit=int(limit) + 1)


class PostgresBackend:
    """Runs each query on a fresh connection as the reader role (async psycopg)."""

    def __init__(self, dsn: str, *, timeout_ms: int = 5000, connect_timeout: float = 5.0) -> None:
        self.dsn = dsn
        self.timeout_ms = timeout_ms
        self.connect_timeout = connect_timeout

    async def query(self, sql: str, limit: int) -> QueryResult:
        try:
            conn = await psycopg.AsyncConnection.connect(
                self.dsn,
                autocommit=True,  # transactions are explicit below, so BEGIN READ ONLY really opens one
                connect_timeout=max(1, int(self.connect_timeout)),
                options=f"-c default_transaction_read_only=on -c statement_timeout={self.timeout_ms}",
            )
        except psycopg.OperationalError as exc:
            raise QueryRefused(f"database unavailable: {exc}") from None
        try:
            return await self._run(conn, sql, limit)
        finally:
            await conn.close()

    async def _run(self, conn: psycopg.AsyncConnection, sql: str, limit: int) -> QueryResult:
        try:
            await conn.execute("BEGIN READ ONLY")
            # A transaction-level snapshot before the model's statement: a leading
            # "SET TRANSACTION READ WRITE" is then refused ("must be set before any query").
            await conn.execute("SELECT 1")
            cur = await conn.execute(capped_statement(sql, limit), prepare=True)
            tag = (cur.statusmessage or "").split(" ", 1)[0].upper()
            if tag != "SELECT":
                # Nothing this could do outlives the rollback below; saying so keeps the model honest.
                raise QueryRefused(f"only SELECT statements are allowed (this was {tag or 'not a query'})")
            columns = [d.name for d in cur.description or ()][:-1]
            raw = await cur.fetchmany(limit + 1) if cur.description else []
            if any(row[-1] for row in raw):
                too_big = f"a row is larger than {MAX_VALUE_BYTES} bytes; select less"
                raise QueryRefused(f"query refused: {too_big}")
            raw = [row[:-1] for row in raw]
        except psycopg.errors.QueryCanceled:
            raise QueryTimeout(f"query stopped after {self.timeout_ms} ms") from None
        except psycopg.Error as exc:
            message = (exc.diag.message_primary if exc.diag else None) or str(exc)
            raise QueryRefused(f"query refused: {message}") from None
        finally:
            with contextlib.suppress(psycopg.Error):
                await conn.execute("ROLLBACK")
        return rows_to_result(columns, list(raw), limit)
