"""query_database: the seed query works, and ≥50 write attempts fail on SQLite and PostgreSQL
with the data checked unchanged afterwards (the database refuses them, not a parser)."""

import hashlib

import psycopg
import pytest
from tools_helpers import ADMIN_DSN

from agent.tools import PostgresBackend, SqliteBackend, SqlToolbox, create_demo_sqlite, ensure_demo_database

TEST_DB = "clearloop_tools_test"

WRITES = [
    "INSERT INTO users (id, name, created_at) VALUES (1, 'x', '2026-01-01')",
    "insert into users values (2, 'y', '2026-01-01')",
    "UPDATE users SET name = 'hacked'",
    "update users set name = 'hacked' where id = 102",
    "DELETE FROM users",
    "DELETE FROM orders WHERE id > 0",
    "DROP TABLE users",
    "DROP TABLE orders",
    "TRUNCATE users",
    "ALTER TABLE users ADD COLUMN pwned text",
    "ALTER TABLE users RENAME TO u2",
    "CREATE TABLE pwned (x int)",
    "CREATE TEMP TABLE pwned (x int)",
    "CREATE INDEX pwned_idx ON users(name)",
    "CREATE VIEW pwned_v AS SELECT 1",
    "CREATE TRIGGER t AFTER INSERT ON users BEGIN SELECT 1; END",
    "SELECT 1; DELETE FROM users",
    "SELECT 1; DROP TABLE users",
    "SELECT * FROM users; UPDATE users SET name = 'x'",
    "select 1;delete from users;",
    "WITH d AS (DELETE FROM users RETURNING *) SELECT * FROM d",
    "WITH u AS (UPDATE users SET name = 'x' RETURNING *) SELECT count(*) FROM u",
    "WITH i AS (INSERT INTO users VALUES (3, 'z', '2026-01-01') RETURNING id) SELECT * FROM i",
    "WITH x AS (SELECT 1) DELETE FROM users",
    "WITH x AS (SELECT 1) UPDATE users SET name = 'x'",
    "INSERT INTO users SELECT id + 1000, name, created_at FROM users",
    "REPLACE INTO users VALUES (102, 'x', '2026-01-01')",
    "INSERT OR REPLACE INTO users VALUES (102, 'x', '2026-01-01')",
    "UPSERT INTO users VALUES (1)",
    "MERGE INTO users u USING (SELECT 1 AS id) s ON u.id = s.id WHEN MATCHED THEN DELETE",
    "SET TRANSACTION READ WRITE",
    "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
    "SET default_transaction_read_only = off",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "START TRANSACTION READ WRITE",
    "COPY users TO PROGRAM 'touch /tmp/clearloop_pwned'",
    "COPY users FROM '/etc/passwd'",
    "COPY (SELECT 1) TO '/tmp/clearloop_pwned'",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT pg_ls_dir('/')",
    "SELECT lo_import('/etc/passwd')",
    "SELECT lo_export(1, '/tmp/clearloop_pwned')",
    "SELECT pg_terminate_backend(pg_backend_pid())",
    "SELECT nextval('users_id_seq')",
    "GRANT ALL ON users TO PUBLIC",
    "REVOKE SELECT ON users FROM PUBLIC",
    "CREATE ROLE pwned SUPERUSER",
    "ALTER ROLE clearloop_demo_reader SUPERUSER",
    "CREATE EXTENSION dblink",
    "DO $$ BEGIN DELETE FROM users; END $$",
    "CREATE FUNCTION f() RETURNS int AS 'SELECT 1' LANGUAGE sql",
    "LOCK TABLE users IN ACCESS EXCLUSIVE MODE",
    "VACUUM",
    "ANALYZE users",
    "REINDEX TABLE users",
    "CLUSTER users",
    "PRAGMA writable_schema = ON",
    "PRAGMA journal_mode = DELETE",
    "PRAGMA query_only = OFF",
    "PRAGMA user_version = 7",
    "ATTACH DATABASE '/tmp/clearloop_pwned.db' AS p",
    "DETACH DATABASE main",
    "VACUUM INTO '/tmp/clearloop_pwned.db'",
    "SELECT load_extension('/tmp/x')",
    "SELECT writefile('/tmp/clearloop_pwned', 'x')",
    "SAVEPOINT s",
    "RELEASE s",
    "CREATE VIRTUAL TABLE v USING fts5(x)",
    "SELECT * FROM users WHERE id = 1; -- \nDELETE FROM users",
    "/* */ DELETE FROM users",
    "DeLeTe FrOm users",
    "NOTIFY pwned",
    "LISTEN pwned",
    "PREPARE p AS DELETE FROM users",
    "SELECT * INTO pwned FROM users",
    "CREATE TABLE pwned AS SELECT * FROM users",
    "COMMENT ON TABLE users IS 'pwned'",
    "SECURITY LABEL ON TABLE users IS 'x'",
    "CALL pwned()",
    "DISCARD ALL",
    "RESET ALL",
    "SELECT * FROM orders FOR SHARE",
    "SELECT * FROM users FOR UPDATE",
]


def test_corpus_is_large_enough():
    assert len(WRITES) >= 50


# --- SQLite ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sqlite_db(tmp_path_factory):
    return create_demo_sqlite(tmp_path_factory.mktemp("sql") / "demo.db")


def file_digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_sqlite_seed_query(sqlite_db):
    box = SqlToolbox(SqliteBackend(sqlite_db))
    sql = "SELECT id, name, created_at FROM users ORDER BY created_at DESC LIMIT 2"
    out = await box.execute("query_database", {"sql": sql, "limit": 2}, None)
    assert out.ok
    assert [r["name"] for r in out.content["rows"]] == ["王明", "李华"]
    assert out.content["count"] == 2 and out.content["truncated"] is False
    more = await box.execute("query_database", {"sql": "SELECT * FROM orders", "limit": 5}, None)
    assert more.content["count"] == 5 and more.content["truncated"] is True


async def test_sqlite_runaway_query_times_out(sqlite_db):
    box = SqlToolbox(SqliteBackend(sqlite_db, timeout=0.3))
    sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    out = await box.execute("query_database", {"sql": sql}, None)
    assert out.code == "timeout"


async def test_sqlite_writes_are_refused(sqlite_db, tmp_path):
    box = SqlToolbox(SqliteBackend(sqlite_db))
    before = file_digest(sqlite_db)
    for sql in WRITES:
        out = await box.execute("query_database", {"sql": sql}, None)
        if out.ok:  # a plain read that happens to be in the corpus (e.g. SELECT 1 FOR UPDATE is not SQLite)
            assert sql.upper().startswith("SELECT"), (sql, out)
        else:
            assert out.code == "execution_error", (sql, out)
    assert file_digest(sqlite_db) == before
    assert sorted(p.name for p in sqlite_db.parent.iterdir()) == ["demo.db"]


# --- PostgreSQL -----------------------------------------------------------------------------------


def _admin_dsn_for(db: str) -> str:
    return psycopg.conninfo.make_conninfo(ADMIN_DSN, dbname=db)


@pytest.fixture(scope="module")
def pg_reader_dsn():
    try:
        with psycopg.connect(ADMIN_DSN, autocommit=True, connect_timeout=3) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (TEST_DB,)).fetchone():
                conn.execute(f'CREATE DATABASE "{TEST_DB}"')
    except psycopg.errors.DuplicateDatabase:
        pass
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable at {ADMIN_DSN}: {exc}")
    return ensure_demo_database(_admin_dsn_for(TEST_DB))


def pg_fingerprint() -> tuple:
    with psycopg.connect(_admin_dsn_for(TEST_DB)) as conn:
        users = conn.execute(
            "SELECT md5(string_agg(u::text, ',' ORDER BY id)) FROM clearloop_demo.users u"
        ).fetchone()
        orders = conn.execute(
            "SELECT md5(string_agg(o::text, ',' ORDER BY id)) FROM clearloop_demo.orders o"
        ).fetchone()
        objects = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')"
        ).fetchone()
        role = conn.execute(
            "SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = 'clearloop_demo_reader'"
        ).fetchone()
        pwned_role = conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = 'pwned'").fetchone()
    return users, orders, objects, role, pwned_role


async def test_ensure_demo_database_is_idempotent(pg_reader_dsn):
    assert ensure_demo_database(_admin_dsn_for(TEST_DB)) == pg_reader_dsn


def test_ensure_demo_database_is_safe_when_called_at_once(pg_reader_dsn):
    # Two workers starting together: ALTER ROLE on one role from several sessions makes PostgreSQL answer
    # "tuple concurrently updated" to the losers instead of waiting (CI saw it between two test processes).
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(6) as pool:
        dsns = list(pool.map(lambda _: ensure_demo_database(_admin_dsn_for(TEST_DB)), range(24)))
    assert set(dsns) == {pg_reader_dsn}


def test_the_first_setup_is_safe_when_called_at_once():
    """Two processes starting together on a fresh database (a worker and daphne, or two workers): each
    creates the demo schema. Unserialised, CREATE SCHEMA IF NOT EXISTS lost the race with a unique
    violation on pg_namespace (CI; 44 of 90 callers in a probe of 15 rounds of 6)."""
    from concurrent.futures import ThreadPoolExecutor

    db = "clearloop_tools_first_setup_test"
    try:
        with psycopg.connect(ADMIN_DSN, autocommit=True, connect_timeout=3) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchone():
                conn.execute(f'CREATE DATABASE "{db}"')
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable at {ADMIN_DSN}: {exc}")
    for _ in range(5):
        with psycopg.connect(_admin_dsn_for(db), autocommit=True) as conn:
            conn.execute("DROP SCHEMA IF EXISTS clearloop_demo CASCADE")
        with ThreadPoolExecutor(6) as pool:
            dsns = list(pool.map(lambda _: ensure_demo_database(_admin_dsn_for(db)), range(6)))
        assert len(set(dsns)) == 1
    with psycopg.connect(dsns[0]) as conn:
        assert conn.execute("SELECT count(*) FROM clearloop_demo.orders").fetchone()[0] > 0


async def test_postgres_seed_query(pg_reader_dsn):
    box = SqlToolbox(PostgresBackend(pg_reader_dsn))
    sql = "SELECT id, name, created_at FROM users ORDER BY created_at DESC LIMIT 2"
    out = await box.execute("query_database", {"sql": sql, "limit": 2}, None)
    assert out.ok, out
    assert [(r["id"], r["name"]) for r in out.content["rows"]] == [(102, "王明"), (101, "李华")]
    joined = await box.execute(
        "query_database",
        {
            "sql": "SELECT u.name, sum(o.amount) AS total FROM users u JOIN orders o ON o.user_id = u.id GROUP BY u.name"
        },
        None,
    )
    assert joined.ok and joined.content["count"] == 10


async def test_postgres_statement_timeout(pg_reader_dsn):
    box = SqlToolbox(PostgresBackend(pg_reader_dsn, timeout_ms=300))
    out = await box.execute("query_database", {"sql": "SELECT pg_sleep(5)"}, None)
    assert out.code == "timeout"


async def test_postgres_writes_are_refused(pg_reader_dsn):
    box = SqlToolbox(PostgresBackend(pg_reader_dsn))
    before = pg_fingerprint()
    for sql in WRITES:
        out = await box.execute("query_database", {"sql": sql}, None)
        if out.ok:  # e.g. SELECT set_config(...): a session setting on a connection that is then closed
            assert sql.upper().startswith("SELECT SET_CONFIG"), (sql, out)
        else:
            assert out.code == "execution_error", (sql, out)
    assert pg_fingerprint() == before
